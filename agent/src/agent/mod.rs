//! `unbounded-mtu agent`: the node agent (`agent.md`). The settings (`crate::settings`) choose a
//! source (files, or an API server: adoption, the startup-only own-Node watch, scoped caches,
//! acknowledgment, taint removal, publication) and an applier (the kernel, or a dry run); one
//! reconcile loop (`run.rs`) drives them, `status/` reports in every mode, and `logging.rs` writes
//! the log.

pub mod ack;
pub mod adopt;
pub mod api_source;
pub mod applier;
pub mod caches;
pub mod failure;
pub mod input;
pub mod intake;
pub mod logging;
pub mod metrics;
pub mod needs;
pub mod node_watch;
pub mod probing;
pub mod publish;
pub mod reconcile;
pub mod run;
pub mod source;
pub mod startup;
pub mod status;
pub mod taint;
#[cfg(test)]
mod testing;

use crate::common::{ExitError, usage};
use crate::settings;
use anyhow::{Context, Result};
use std::sync::Arc;

/// How the agent's run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// SIGTERM, or `--once` done: exit 0.
    Done,
    /// The adopted assignment changed: exit 3.
    AssignmentChanged(String),
    /// The own Node was deleted: exit 4.
    NodeDeleted,
}

impl Exit {
    /// The process exit code.
    pub fn code(&self) -> u8 {
        match self {
            Exit::Done => 0,
            Exit::AssignmentChanged(_) => 3,
            Exit::NodeDeleted => 4,
        }
    }
}

/// Entry point of the subcommand: the settings from the flags (exit 2 when they cannot be
/// made), the agent on a runtime of its own, and the outcome as an exit code (3 assignment
/// changed, 4 Node deleted, 1 fatal error).
pub fn main(settings: settings::Agent) -> Result<()> {
    logging::init(settings.log_format);
    let settings = Arc::new(settings);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = rt.block_on(run::main(settings));
    // Blocking work in progress (a kernel write) is not waited for beyond this.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(Exit::Done) => Ok(()),
        Ok(e @ Exit::AssignmentChanged(_)) | Ok(e @ Exit::NodeDeleted) => {
            let message = match &e {
                Exit::AssignmentChanged(why) => format!("restarting: {why}"),
                _ => "the Node was deleted".to_string(),
            };
            Err(anyhow::Error::new(ExitError {
                code: e.code(),
                message,
            }))
        }
        Err(e) => match e.downcast_ref::<status::ServeError>() {
            Some(status::ServeError::Address { .. }) => Err(usage(e.to_string())),
            _ => Err(anyhow::Error::new(ExitError {
                code: 1,
                message: crate::common::chain_text(&e),
            })),
        },
    }
}

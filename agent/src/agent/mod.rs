//! `unbounded-mtu agent`: the node agent (`agent.md`). The settings (`crate::settings`) choose a
//! source (files, or an API server: adoption, the startup-only own-Node watch, scoped caches,
//! acknowledgment, taint removal, publication) and an applier (the kernel, or a dry run); one
//! reconcile loop (`run.rs`) drives them, and `status.rs` reports in every mode.

pub mod ack;
pub mod adopt;
pub mod api_source;
pub mod applier;
pub mod caches;
pub mod failure;
pub mod input;
pub mod intake;
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

use crate::cli::{AgentArgs, LogFormat};
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

/// Muted in every log filter: kube's client layer, which logs every failed request at `error`
/// without saying what the request was for. The agent reports each of those failures itself,
/// with its step and retry, so the same error is not printed twice. A `RUST_LOG` directive for
/// this target replaces it.
pub const MUTED_LOG_TARGETS: &str = "kube_client::client::builder=off";

/// The log filter: [`MUTED_LOG_TARGETS`], then `RUST_LOG` (`info` when unset or invalid).
fn log_filter() -> tracing_subscriber::EnvFilter {
    use tracing_subscriber::EnvFilter;
    let user = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "info".to_string());
    EnvFilter::try_new(format!("{MUTED_LOG_TARGETS},{user}"))
        .unwrap_or_else(|_| EnvFilter::new(format!("{MUTED_LOG_TARGETS},info")))
}

/// Logs to standard error in every mode (`RUST_LOG` filters, `info` by default; see
/// [`log_filter`]), as text or one JSON object per line: the agent's warnings (a broken
/// assignment, failed reconciles, API errors) are its log.
fn init_logging(format: LogFormat) {
    let filter = log_filter();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // Fails only when a subscriber is installed already; that one logs then.
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
    };
}

/// Entry point of the subcommand: the settings from the flags (exit 2 when they cannot be
/// made), the agent on a runtime of its own, and the outcome as an exit code (3 assignment
/// changed, 4 Node deleted, 1 fatal error).
pub fn main(args: &AgentArgs) -> Result<()> {
    init_logging(args.log_format);
    let settings = Arc::new(settings::Agent::from_args(args).map_err(|e| usage(e.to_string()))?);
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

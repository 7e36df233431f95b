//! Where the reconcile loop's input comes from: the [`Source`] trait, and its file
//! implementation (`--manifests`: re-read when they change, checked every 2 s). The API
//! implementation is `api_source.rs`.

use super::Exit;
use super::failure::{Failure, InputError};
use super::reconcile::{Linked, Outcome};
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use topology_core::decode::Decoded;

/// Why a source woke the loop.
#[derive(Debug)]
pub enum Wake {
    /// The input changed.
    Changed,
    /// The process must end.
    Exit(Exit),
}

/// The input of the reconcile loop.
pub trait Source: Send {
    /// Waits until the input changes or the process must end. Cancel-safe: the loop waits on it
    /// beside timers and the shutdown signal.
    fn next(&mut self) -> impl Future<Output = Result<Wake, Failure>> + Send;

    /// Drops the changes queued while the loop debounced.
    fn drain(&mut self);

    /// The objects to reconcile now; `None` while the input is incomplete (a cache has not
    /// completed its initial list).
    fn input(&mut self) -> Result<Option<Decoded>, Failure>;

    /// Whether the input a plan was resolved from holds everything that plan depends on, so
    /// that it may be applied. The API source checks that it watches the metadata (underlay
    /// annotations) of every Node the plan links to, and when it does not, starts the watch
    /// that does and answers false: the turn applies nothing, and the new cache's LIST starts
    /// the next one.
    fn complete_for(&mut self, linked: &Linked) -> bool;

    /// The node's UID, when the source knows it (the adopted assignment names it).
    fn node_uid(&self) -> Option<String>;

    /// What follows a successful reconcile: publication, the acknowledgment, the taint. May end
    /// the process.
    fn after_success(
        &mut self,
        outcome: &Outcome,
    ) -> impl Future<Output = Result<Option<Exit>, Failure>> + Send;
}

/// `--manifests`: files or directories, re-read when their names, sizes or modification times
/// change.
pub struct Files {
    paths: Vec<String>,
    poll: Duration,
    seen: Option<Signature>,
}

type Signature = Vec<(PathBuf, Option<SystemTime>, u64)>;

impl Files {
    /// Reads `paths`, checked for changes every `poll`.
    pub fn new(paths: Vec<String>, poll: Duration) -> Files {
        Files {
            paths,
            poll,
            seen: None,
        }
    }

    fn signature(&self) -> Signature {
        let mut out = Vec::new();
        for p in &self.paths {
            for e in walkdir::WalkDir::new(p)
                .sort_by_file_name()
                .into_iter()
                .flatten()
            {
                if let Ok(m) = e.metadata() {
                    out.push((e.path().to_path_buf(), m.modified().ok(), m.len()));
                }
            }
        }
        out
    }
}

impl Source for Files {
    async fn next(&mut self) -> Result<Wake, Failure> {
        loop {
            tokio::time::sleep(self.poll).await;
            let now = self.signature();
            if self.seen.as_ref() != Some(&now) {
                return Ok(Wake::Changed);
            }
        }
    }

    fn drain(&mut self) {}

    fn input(&mut self) -> Result<Option<Decoded>, Failure> {
        self.seen = Some(self.signature());
        mtu_solver::load::load(&self.paths)
            .map(Some)
            .map_err(|e| Failure::Input(InputError(Box::new(e))))
    }

    fn complete_for(&mut self, _: &Linked) -> bool {
        true
    }

    fn node_uid(&self) -> Option<String> {
        None
    }

    async fn after_success(&mut self, _: &Outcome) -> Result<Option<Exit>, Failure> {
        Ok(None)
    }
}

//! Where the reconcile loop's input comes from: the [`Source`] trait, and its file
//! implementation (`--manifests`: re-read when they change, checked every 2 s). The API
//! implementation is `api_source.rs`.

use super::Exit;
use super::failure::{Failure, InputError};
use super::input::{Input, Objects, Piece};
use super::reconcile::{Linked, Outcome};
use mtu_solver::locality::{Fingerprint, Nodes, Tracker};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// How the plan of a turn's input came to be in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The turn resolved and applied it.
    Applied,
    /// An earlier turn applied it, and this turn's change could not reach it: the next input's
    /// delta still counts from that turn's input, whose topology the reconcile keeps.
    Unreached,
}

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

    /// The objects to reconcile now, with how they differ from the input of the last turn
    /// that applied a plan ([`Settled::Applied`]); `None` while the input is incomplete (a
    /// cache has not completed its initial list).
    fn input(&mut self) -> Result<Option<Input>, Failure>;

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

    /// The plan of the last input is in the kernel, as `how` says. What waited for that may
    /// end; when this turn applied it, the next input's delta is counted from this one.
    fn settled(&mut self, how: Settled);
}

/// `--manifests`: files or directories, re-read when their names, sizes or modification times
/// change.
pub struct Files {
    paths: Vec<String>,
    poll: Duration,
    seen: Option<Signature>,
    /// The fingerprint of what was read last (its Nodes held together: the reconcile resolves
    /// again on any Node change), and what changed since the last turn that applied a plan.
    tracker: Tracker,
}

type Signature = Vec<(PathBuf, Option<SystemTime>, u64)>;

impl Files {
    /// Reads `paths`, checked for changes every `poll`.
    pub fn new(paths: Vec<String>, poll: Duration) -> Files {
        Files {
            paths,
            poll,
            seen: None,
            tracker: Tracker::default(),
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

    fn input(&mut self) -> Result<Option<Input>, Failure> {
        self.seen = Some(self.signature());
        let decoded = mtu_solver::load::load(&self.paths)
            .map_err(|e| Failure::Input(InputError(Box::new(e))))?;
        self.tracker.set(Fingerprint::with(
            &decoded.objects,
            &decoded.diagnostics,
            Nodes::Together,
        ));
        // The objects are not kept: the next change re-reads every file.
        let piece = Arc::new(Piece::of(decoded));
        Ok(Some(Input::new(self.tracker.delta(), move || {
            Objects::new(vec![Arc::from([piece])])
        })))
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

    fn settled(&mut self, how: Settled) {
        if how == Settled::Applied {
            self.tracker.mark();
        }
    }
}

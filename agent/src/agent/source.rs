//! Where the reconcile loop's input comes from: the [`Source`] trait, and its file
//! implementation (`--manifests`: re-read when they change, checked every 2 s). The API
//! implementation is `api_source.rs`.

use super::Exit;
use super::failure::{Failure, InputError};
use super::reconcile::{Linked, Outcome};
use mtu_solver::locality::Fingerprint;
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};
use topology_core::decode::Decoded;

/// One turn's input: its fingerprint now, its objects decoded when the turn resolves (a turn
/// whose change cannot reach the plan never decodes them).
pub struct Input {
    fingerprint: Fingerprint,
    decode: Box<dyn FnOnce() -> Decoded + Send>,
}

impl Input {
    /// Objects already decoded, fingerprinted here.
    pub fn decoded(decoded: Decoded) -> Input {
        Input {
            fingerprint: Fingerprint::of(&decoded.objects, &decoded.diagnostics),
            decode: Box::new(move || decoded),
        }
    }

    /// Objects of this fingerprint, decoded by `decode` when needed.
    pub fn deferred(
        fingerprint: Fingerprint,
        decode: impl FnOnce() -> Decoded + Send + 'static,
    ) -> Input {
        Input {
            fingerprint,
            decode: Box::new(decode),
        }
    }

    /// Its fingerprint.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// Its fingerprint and its objects, decoded.
    pub fn decode(self) -> (Fingerprint, Decoded) {
        (self.fingerprint, (self.decode)())
    }
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

    /// The objects to reconcile now; `None` while the input is incomplete (a cache has not
    /// completed its initial list). Two inputs of one source are fingerprinted alike.
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

    /// The plan of the current input is in the kernel: applied by this turn, or by an earlier
    /// one when this turn's change could not reach it. What waited for that may end.
    fn settled(&mut self) {}
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

    fn input(&mut self) -> Result<Option<Input>, Failure> {
        self.seen = Some(self.signature());
        mtu_solver::load::load(&self.paths)
            .map(|d| Some(Input::decoded(d)))
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

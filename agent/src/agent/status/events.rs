//! The reports that need an operator, as Warning Events on the agent's own Pod (API mode with
//! the Pod known).

use super::Status;
use crate::agent::failure::Step;
use crate::settings::PodRef;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A report that becomes a Warning Event on the agent's own Pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// The Node's pool label names a GatewayPool that does not exist and no pool takes the
    /// node: nothing is adopted or acknowledged.
    BrokenAssignment {
        /// The node.
        node: String,
        /// Why (the same text as `/status`).
        reason: String,
    },
    /// Applying the plan to the dataplane failed; the next reconcile redoes every step.
    ApplyFailed {
        /// The error.
        error: String,
    },
}

/// The Events API limits a note to 1 kB.
const NOTE_LIMIT: usize = 1024;

impl Report {
    /// The Event: `reason` and `action` name what happened, the note says why.
    pub fn event(&self) -> Event {
        let (reason, action, note) = match self {
            Report::BrokenAssignment { node, reason } => (
                "BrokenAssignment",
                "Adopt",
                format!("Node {node}: {reason}"),
            ),
            Report::ApplyFailed { error } => ("ApplyFailed", "Apply", error.clone()),
        };
        Event {
            type_: EventType::Warning,
            reason: reason.into(),
            note: Some(truncate(note, NOTE_LIMIT)),
            action: action.into(),
            secondary: None,
        }
    }
}

/// `s` cut to at most `max` bytes on a character boundary.
fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max.saturating_sub('…'.len_utf8());
        while !s.is_char_boundary(cut) {
            cut = cut.saturating_sub(1);
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

fn object_ref(pod: &PodRef) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(pod.namespace.clone()),
        name: Some(pod.name.clone()),
        uid: pod.uid.clone(),
        ..Default::default()
    }
}

/// The `reportingController` of the agent's Events.
pub const EVENT_CONTROLLER: &str = "mtu.unbounded-cloud.io/agent";

/// Publishes the reports [`Status::report`] receives as Events on the agent's Pod, one at a
/// time, through kube's [`Recorder`] (a repeat of the same report within its cache time patches
/// the Event's series instead of creating another Event).
pub struct Events {
    status: Arc<Status>,
    task: Option<JoinHandle<()>>,
}

impl Events {
    /// Starts the publisher and connects it to `status`.
    pub fn start(client: &kube::Client, pod: PodRef, status: &Arc<Status>) -> Events {
        let (tx, mut rx) = mpsc::unbounded_channel::<Report>();
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: EVENT_CONTROLLER.into(),
                instance: Some(pod.name.clone()),
            },
        );
        let reference = object_ref(&pod);
        let st = status.clone();
        let task = tokio::spawn(async move {
            while let Some(r) = rx.recv().await {
                if let Err(e) = recorder.publish(&r.event(), &reference).await {
                    st.count_error(Step::Publish);
                    tracing::warn!(error = %crate::k8s::error::describe(&e), event = ?r,
                        "cannot post the Event on the agent's Pod");
                }
            }
        });
        status.set_event_sink(Some(tx));
        Events {
            status: status.clone(),
            task: Some(task),
        }
    }

    /// Disconnects from the status and waits up to `grace` for the reports already handed over
    /// to be posted.
    pub async fn finish(mut self, grace: Duration) {
        self.status.set_event_sink(None);
        if let Some(mut t) = self.task.take()
            && tokio::time::timeout(grace, &mut t).await.is_err()
        {
            t.abort();
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            self.status.set_event_sink(None);
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_become_warning_events_with_a_bounded_note() {
        let e = Report::ApplyFailed {
            error: "é".repeat(600),
        }
        .event();
        assert_eq!(e.type_, EventType::Warning);
        assert_eq!(
            (e.reason.as_str(), e.action.as_str()),
            ("ApplyFailed", "Apply")
        );
        let note = e.note.expect("note");
        assert!(note.len() <= NOTE_LIMIT, "{}", note.len());
        assert!(note.ends_with('…'));
        let b = Report::BrokenAssignment {
            node: "n1".into(),
            reason: "the label names GatewayPool \"x\"".into(),
        }
        .event();
        assert_eq!(b.reason, "BrokenAssignment");
        assert_eq!(
            b.note.as_deref(),
            Some("Node n1: the label names GatewayPool \"x\"")
        );
    }

    #[test]
    fn reports_reach_the_sink_only_while_one_is_set() {
        let s = Status::default();
        s.report(Report::ApplyFailed { error: "x".into() });
        let (tx, mut rx) = mpsc::unbounded_channel();
        s.set_event_sink(Some(tx));
        s.report(Report::ApplyFailed { error: "y".into() });
        assert_eq!(
            rx.try_recv().ok(),
            Some(Report::ApplyFailed { error: "y".into() })
        );
        s.set_event_sink(None);
        s.report(Report::ApplyFailed { error: "z".into() });
        assert!(rx.try_recv().is_err(), "nothing after the sink was removed");
    }
}

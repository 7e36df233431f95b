//! The API source of the reconcile loop (`agent.md`): the assignment adopted once, the
//! startup-only own-Node watch until the acknowledgment, the scoped caches, and after each
//! successful reconcile the publication, the acknowledgment and the gateway taint's removal.

use super::Exit;
use super::ack::acknowledge;
use super::adopt::Adopted;
use super::caches::{Caches, NodeSelection, carries_gateway_taint};
use super::failure::{ApiError, Failure, PublishError};
use super::input::Input;
use super::intake::Intake;
use super::needs::Needs;
use super::node_watch::WatchEnd;
use super::publish::publish;
use super::reconcile::{Linked, Outcome};
use super::source::{Settled, Source, Wake};
use super::startup::{self, Adoption, StartupWatch, exit_of};
use super::status::Status;
use super::taint::{RetryPolicy, remove_gateway_taint};
use crate::k8s::Backoff;
use crate::k8s::store::Change;
use crate::settings::{self, Apply, WatchScope};
use kube::Client;
use std::sync::Arc;
use tokio::sync::mpsc;
use topology_core::vocab::Kind;

/// The API source.
pub struct Api {
    client: Client,
    settings: Arc<settings::Agent>,
    status: Arc<Status>,
    adopted: Adopted,
    caches: Caches,
    changes: mpsc::UnboundedReceiver<Change>,
    startup: StartupWatch,
    acknowledged: bool,
    taint_pending: bool,
    /// The heavy watches are no longer needed: stop them once the plan of an input that needs
    /// none is in the kernel (no dataplane state depends on them then).
    stop_heavy_after_success: bool,
    /// The cached objects decoded and digested, kept across turns.
    intake: Intake,
    /// What it must watch, as last worked out.
    needs: Needs,
}

impl Api {
    /// Adopts the assignment and starts the caches. Returns the exit the startup watch asked
    /// for when it ended the process before adoption. Cancel by dropping the future.
    pub async fn start(
        client: Client,
        settings: Arc<settings::Agent>,
        status: Arc<Status>,
    ) -> Result<Result<Api, Exit>, Failure> {
        let adoption = startup::adopt(&client, &settings.node, &status, Backoff::watch())
            .await
            .map_err(ApiError::StartupWatch)?;
        let (adopted, startup) = match adoption {
            Adoption::Adopted(a, w) => (*a, w),
            Adoption::Exit(exit) => return Ok(Err(exit)),
        };
        // The change queue exists before any cache starts: nothing that arrives is lost. The
        // heavy kinds start with a gateway; a worker starts them once an enabled assignment
        // lists its Site (known from the light caches).
        let (tx, changes) = mpsc::unbounded_channel::<Change>();
        let everything = settings.watches == WatchScope::Everything;
        let caches = Caches::start(
            &client,
            &tx,
            &status,
            everything || adopted.assignment.pool.is_some(),
        );
        let taint_pending =
            adopted.assignment.pool.is_none() && carries_gateway_taint(&adopted.node);
        Ok(Ok(Api {
            client,
            settings,
            status,
            adopted,
            caches,
            changes,
            startup,
            acknowledged: false,
            taint_pending,
            stop_heavy_after_success: false,
            intake: Intake::default(),
            needs: Needs::default(),
        }))
    }

    /// Starts or schedules the end of the heavy watches as the assignments say.
    fn follow_assignments(&mut self) {
        if self.settings.watches == WatchScope::Everything {
            return;
        }
        if let Some(a) = self.caches.store(Kind::SiteGatewayPoolAssignment)
            && a.synced()
        {
            let need = self.needs.heavy(&self.adopted, a);
            if need && !self.caches.heavy() {
                tracing::info!("watching GatewayPools, GatewayPoolNodes, GatewayPoolPeerings");
                self.caches.set_heavy(true, &self.status);
            }
            self.stop_heavy_after_success = !need && self.caches.heavy();
        }
    }

    /// Acknowledges the assignment on the own Pod and closes the startup watch right away.
    async fn acknowledge(&mut self) -> Result<Option<Exit>, Failure> {
        let Some(pod) = &self.settings.pod else {
            tracing::warn!(
                "POD_NAME / POD_NAMESPACE unset: no acknowledgment; the startup watch stays"
            );
            self.acknowledged = true;
            return Ok(None);
        };
        acknowledge(
            &self.client,
            &pod.namespace,
            &pod.name,
            &self.adopted.assignment,
        )
        .await
        .map_err(|source| PublishError::Acknowledge {
            pod: format!("{}/{}", pod.namespace, pod.name),
            source,
        })?;
        tracing::info!(assignment = %self.adopted.assignment.annotation_value(), "acknowledged");
        self.acknowledged = true;
        if self.startup.running() {
            return verdict_exit(self.startup.close().await);
        }
        Ok(None)
    }
}

fn verdict_exit(end: Result<WatchEnd, tokio::task::JoinError>) -> Result<Option<Exit>, Failure> {
    end.map(|e| exit_of(&e))
        .map_err(|e| Failure::Api(ApiError::StartupWatch(e)))
}

impl Source for Api {
    async fn next(&mut self) -> Result<Wake, Failure> {
        loop {
            tokio::select! {
                end = self.startup.ended() => {
                    if let Some(exit) = verdict_exit(end)? {
                        return Ok(Wake::Exit(exit));
                    }
                }
                c = self.changes.recv() => match c {
                    Some(Change::Failed(kind, e)) => {
                        // The watcher retries after its backoff; the error shows until the
                        // kind reads again.
                        let text = crate::k8s::error::one_line(e.as_ref());
                        tracing::warn!(resource = %kind, code = ?e.code, error = %text,
                            "reading the API failed; retrying after the backoff");
                        self.status.api_failed(kind.plural(), text);
                    }
                    Some(Change::Listed(kind) | Change::Updated(kind)) => {
                        self.status.api_recovered(kind.plural());
                        return Ok(Wake::Changed);
                    }
                    None => return Err(ApiError::CachesStopped.into()),
                },
            }
        }
    }

    fn drain(&mut self) {
        while self.changes.try_recv().is_ok() {}
    }

    fn input(&mut self) -> Result<Option<Input>, Failure> {
        self.follow_assignments();
        if !self.caches.synced() {
            return Ok(None);
        }
        let snapshot = self.caches.held();
        Ok(Some(self.intake.input(&snapshot, &self.adopted)))
    }

    /// Node metadata (underlay annotations) of the Sites the plan links into, or of every Node
    /// while a peer has no Site label: when that selection changes, the new cache is waited
    /// for before anything is applied.
    fn complete_for(&mut self, linked: &Linked) -> bool {
        let selection = match self.settings.watches {
            WatchScope::Needed => self.needs.nodes(
                linked,
                &self.settings.node,
                self.caches.store(Kind::SiteNodeSlice).map(|s| s.as_ref()),
                self.caches.node_metadata().map(|m| m.as_ref()),
            ),
            WatchScope::Everything => NodeSelection::All {
                unlabelled: Vec::new(),
            },
        };
        !self.caches.select_nodes(&selection, &self.status)
    }

    fn node_uid(&self) -> Option<String> {
        Some(self.adopted.assignment.node_uid.clone())
    }

    async fn after_success(&mut self, outcome: &Outcome) -> Result<Option<Exit>, Failure> {
        if self.settings.apply == Apply::Kernel && outcome.applied.in_kernel {
            publish(&self.client, &self.settings.node, &outcome.publication).await?;
        }
        if !self.acknowledged
            && let Some(exit) = self.acknowledge().await?
        {
            return Ok(Some(exit));
        }
        if self.taint_pending {
            remove_gateway_taint(&self.client, &self.settings.node, RetryPolicy::default())
                .await
                .map_err(PublishError::Taint)?;
            self.taint_pending = false;
        }
        Ok(None)
    }

    fn settled(&mut self, how: Settled) {
        if how == Settled::Applied {
            self.intake.mark();
        }
        if self.stop_heavy_after_success {
            tracing::info!(
                "dataplane state without gateways applied; stopping the GatewayPool, GatewayPoolNode and GatewayPoolPeering watches"
            );
            self.caches.set_heavy(false, &self.status);
            self.stop_heavy_after_success = false;
        }
    }
}

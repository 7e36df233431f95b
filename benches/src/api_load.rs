//! The API load one node agent puts on the API server (issue 40, item 4: the seed's headline,
//! "node agent API calls cut by 73.8 %" by scoping worker watches): the real agent in API mode
//! against the stateful fake API server of `test_utils::apiserver`, serving a generated
//! cluster, through start-up and then a fixed window of typical churn (gateway heartbeats on
//! every GatewayPoolNode, Node status updates, an occasional SitePeering cap change). What the
//! server served it is counted: requests, watch events delivered, bytes delivered.

use serde_json::{Value, json};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_utils::apiserver::{ApiServer, Load, collection_of};
use unbounded_mtu::agent::applier::{Applied, Applier};
use unbounded_mtu::agent::run::{Stop, run_api};
use unbounded_mtu::agent::status::Status;
use unbounded_mtu::settings::{self, WatchScope};

/// The churn of the window, in rounds.
#[derive(Clone, Copy, Debug)]
pub struct Churn {
    /// Rounds of changes.
    pub rounds: usize,
    /// Time between rounds (longer than the agent's debounce, so each round is its own turn).
    pub pause: Duration,
    /// Node status updates per round (round-robin over every Node).
    pub node_updates: usize,
    /// A SitePeering cap changes every this many rounds (round-robin over the capped ones).
    pub peering_every: usize,
}

impl Churn {
    /// Ten rounds of 400 ms: each round every gateway's heartbeat and 2 % of the Nodes' status,
    /// a SitePeering cap every fifth round.
    pub fn typical(nodes: usize) -> Churn {
        Churn {
            rounds: 10,
            pause: Duration::from_millis(400),
            node_updates: (nodes / 50).max(1),
            peering_every: 5,
        }
    }
}

/// What the server served one agent.
#[derive(Clone, Copy, Debug)]
pub struct Served {
    /// From the agent's start to its first reconciled plan (and a quiet moment after it).
    pub startup: Load,
    /// During the churn window.
    pub churn: Load,
    /// The changes the churn made (every one of them, whoever watches it).
    pub changes: u64,
    /// Wall time from start to the first reconciled plan.
    pub ready_after: Duration,
}

impl Served {
    /// Start-up and churn together.
    pub fn total(&self) -> Load {
        let (a, b) = (self.startup, self.churn);
        Load {
            requests: a.requests + b.requests,
            lists: a.lists + b.lists,
            watches: a.watches + b.watches,
            gets: a.gets + b.gets,
            patches: a.patches + b.patches,
            events: a.events + b.events,
            bytes: a.bytes + b.bytes,
        }
    }
}

/// Why a measurement could not be made.
#[derive(Debug)]
pub enum LoadError {
    /// The runtime or the server did not start.
    Start(std::io::Error),
    /// The agent's settings or client could not be made.
    Agent(String),
    /// The agent reconciled no plan within the time allowed (its exit or failure, if any).
    NotReady(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Start(e) => write!(f, "start: {e}"),
            LoadError::Agent(e) => write!(f, "agent: {e}"),
            LoadError::NotReady(e) => write!(f, "no plan reconciled: {e}"),
        }
    }
}

/// An applier whose kernel holds every plan at once (nothing written): the agent then
/// publishes as on a real node.
pub struct Holding;

impl Applier for Holding {
    fn detect_underlay(
        &self,
        _: &dataplane_linux::DesiredState,
        _: &[IpAddr],
    ) -> dataplane_linux::Result<Option<u32>> {
        Ok(None)
    }

    fn apply(&self, _: &dataplane_linux::DesiredState) -> dataplane_linux::Result<Applied> {
        Ok(Applied {
            in_kernel: true,
            ..Applied::default()
        })
    }

    fn remove_owned(&self) -> dataplane_linux::Result<Applied> {
        Ok(Applied::default())
    }
}

/// The agent of Node `node` run as the DaemonSet runs it (the release binary, its allocator's
/// settings, `--dry-run --once`) in API mode against the fake API server holding `objects` (as
/// [`crate::api_cluster::served`] gives them): its peak resident memory (`VmHWM`, as
/// [`crate::memory::agent_peak`] reads it for files), from start to its first reconciled plan.
pub fn agent_peak(objects: &[Value], node: &str) -> Result<crate::memory::Peak, String> {
    let bin = crate::memory::agent_binary()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let declared = collections();
    let declared: Vec<(&str, &str)> = declared
        .iter()
        .map(|(v, k)| (v.as_str(), k.as_str()))
        .collect();
    let server = runtime
        .block_on(ApiServer::start(&declared, objects.iter().cloned()))
        .map_err(|e| format!("fake API server: {e}"))?;
    let config =
        std::env::temp_dir().join(format!("perf-budget-{}.kubeconfig", std::process::id()));
    server
        .write_kubeconfig(&config)
        .map_err(|e| format!("write {}: {e}", config.display()))?;
    let started = Instant::now();
    let child =
        crate::memory::spawn_agent(&bin, node, &["--kubeconfig".as_ref(), config.as_os_str()]);
    // The server answers on the runtime's thread while this one watches the agent.
    let window = Duration::from_secs(300);
    let peak = child
        .and_then(|c| crate::memory::watch(c, started, Some(window)))
        .and_then(|p| {
            if p.took < window {
                Ok(p)
            } else {
                Err(format!("no plan reconciled within {window:?}"))
            }
        });
    let _ = std::fs::remove_file(&config);
    drop(server);
    peak
}

/// The kinds the agent reads, declared so that an empty collection answers with an empty list.
fn collections() -> Vec<(String, String)> {
    unbounded_mtu::k8s::ResourceKind::ALL
        .into_iter()
        .map(|k| (k.api_version(), k.kind.as_str().to_string()))
        .collect()
}

/// Measures the agent of Node `own` watching as `scope` says, the server holding `objects`
/// (as [`crate::api_cluster::served`] gives them), through start-up and `churn`.
pub fn measure(
    objects: &[Value],
    own: &str,
    scope: WatchScope,
    churn: Churn,
) -> Result<Served, LoadError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(LoadError::Start)?;
    runtime.block_on(run(objects, own, scope, churn))
}

async fn run(
    objects: &[Value],
    own: &str,
    scope: WatchScope,
    churn: Churn,
) -> Result<Served, LoadError> {
    let declared = collections();
    let declared: Vec<(&str, &str)> = declared
        .iter()
        .map(|(v, k)| (v.as_str(), k.as_str()))
        .collect();
    let server = ApiServer::start(&declared, objects.iter().cloned())
        .await
        .map_err(LoadError::Start)?;
    let mut settings = agent_settings(own)?;
    settings.watches = scope;
    let status = Arc::new(Status::default());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = Stop::on(async move {
        let _ = stop_rx.await;
    });
    let started = Instant::now();
    let agent = tokio::spawn(run_api(
        client(&server)?,
        Arc::new(settings),
        status.clone(),
        stop,
        Arc::new(Holding),
    ));
    while !status.ready() {
        if agent.is_finished() || started.elapsed() > Duration::from_secs(120) {
            let end = match agent.await {
                Ok(r) => format!("{r:?}"),
                Err(e) => e.to_string(),
            };
            return Err(LoadError::NotReady(end));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ready_after = started.elapsed();
    tokio::time::sleep(churn.pause).await;
    let startup = server.load();
    server.reset_load();
    let changes = make_churn(&server, objects, churn).await;
    tokio::time::sleep(churn.pause).await;
    let served = Served {
        startup,
        churn: server.load(),
        changes,
        ready_after,
    };
    let _ = stop_tx.send(());
    let _ = agent.await;
    Ok(served)
}

/// The settings of the agent of Node `own` as the DaemonSet runs it, its underlay stated (1500).
pub fn agent_settings(own: &str) -> Result<settings::Agent, LoadError> {
    use clap::Parser;
    let argv = [
        "unbounded-mtu",
        "agent",
        "--node-name",
        own,
        "--underlay-mtu",
        "1500",
    ];
    let cli = unbounded_mtu::cli::Cli::try_parse_from(argv)
        .map_err(|e| LoadError::Agent(e.to_string()))?;
    let unbounded_mtu::cli::Command::Agent(args) = cli.command else {
        return Err(LoadError::Agent("not the agent command".into()));
    };
    settings::Agent::from_args(&args).map_err(|e| LoadError::Agent(e.to_string()))
}

fn client(server: &ApiServer) -> Result<kube::Client, LoadError> {
    let url = server
        .url()
        .parse()
        .map_err(|e: http::uri::InvalidUri| LoadError::Agent(e.to_string()))?;
    let mut cfg = kube::Config::new(url);
    // Watches stay open as long as the server holds them.
    cfg.read_timeout = None;
    kube::Client::try_from(cfg).map_err(|e| LoadError::Agent(e.to_string()))
}

/// The churn's rounds; returns how many changes were made.
async fn make_churn(server: &ApiServer, objects: &[Value], churn: Churn) -> u64 {
    let of_kind = |kind: &str| -> Vec<(String, String)> {
        objects
            .iter()
            .filter(|o| o["kind"] == kind)
            .filter(|o| kind != "SitePeering" || o.pointer("/spec/tunnelMTU").is_some())
            .filter_map(|o| {
                Some((
                    collection_of(o)?,
                    o["metadata"]["name"].as_str()?.to_string(),
                ))
            })
            .collect()
    };
    let (gateways, nodes, peerings) = (
        of_kind("GatewayPoolNode"),
        of_kind("Node"),
        of_kind("SitePeering"),
    );
    let mut changes = 0u64;
    let mut next_node = 0usize;
    for round in 0..churn.rounds {
        let beat = json!(format!("2026-12-04T00:00:{round:02}Z"));
        for (path, name) in &gateways {
            changes += u64::from(server.update(path, name, |o| {
                o["status"]["lastHeartbeatTime"] = beat.clone();
            }));
        }
        for _ in 0..churn.node_updates.min(nodes.len()) {
            let (path, name) = &nodes[next_node % nodes.len()];
            next_node += 1;
            changes += u64::from(server.update(path, name, |o| {
                o["status"]["conditions"] =
                    json!([{"type": "Ready", "status": "True", "lastHeartbeatTime": beat}]);
            }));
        }
        if churn.peering_every > 0 && round % churn.peering_every == churn.peering_every - 1 {
            let i = round / churn.peering_every;
            if let Some((path, name)) = peerings.get(i % peerings.len().max(1)) {
                changes += u64::from(server.update(path, name, |o| {
                    let cap = o["spec"]["tunnelMTU"].as_u64().unwrap_or(1400);
                    o["spec"]["tunnelMTU"] = json!(cap - 10);
                }));
            }
        }
        tokio::time::sleep(churn.pause).await;
    }
    changes
}

/// The served `objects` without the SiteGatewayPoolAssignments that list `site`: its workers
/// then need no gateway topology (the scoped worker of the seed's measurement).
pub fn unassigned(objects: &[Value], site: &str) -> Vec<Value> {
    objects
        .iter()
        .filter(|o| {
            o["kind"] != "SiteGatewayPoolAssignment"
                || !o
                    .pointer("/spec/sites")
                    .and_then(Value::as_array)
                    .is_some_and(|s| s.iter().any(|x| x == site))
        })
        .cloned()
        .collect()
}

/// A worker (a Node without the gateway-pool label) of a Site other than `not`, whose Site an
/// assignment in `objects` lists: `(node, site)`.
pub fn listed_worker(objects: &[Value], not: &str) -> Option<(String, String)> {
    use test_utils::testkit::scale::GATEWAY_SELECTOR_KEY;
    use topology_core::vocab::SITE_LABEL_KEY;
    let listed: std::collections::BTreeSet<&str> = objects
        .iter()
        .filter(|o| o["kind"] == "SiteGatewayPoolAssignment")
        .filter_map(|o| o.pointer("/spec/sites")?.as_array())
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    objects
        .iter()
        .filter(|o| o["kind"] == "Node")
        .find_map(|o| {
            let labels = o.pointer("/metadata/labels")?;
            let site = labels.get(SITE_LABEL_KEY)?.as_str()?;
            (site != not && listed.contains(site) && labels.get(GATEWAY_SELECTOR_KEY).is_none())
                .then(|| {
                    Some((
                        o["metadata"]["name"].as_str()?.to_string(),
                        site.to_string(),
                    ))
                })?
        })
}

//! What a turn of the agent's loop costs and writes, on a kernel that records its writes: a
//! steady-state turn plans the node once (twice only when underlay detection contradicts the
//! underlay the turn assumed), an event that cannot touch the node ends the turn `unreached`
//! (nothing resolved, nothing written to the kernel) from files and from a live watch of the
//! mock API server, and one that changes the node's route MTUs writes exactly those routes.

mod support;

use dataplane_linux::model::{LinkKind, Op};
use dataplane_linux::{Dataplane, DesiredState, FakeKernel};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use unbounded_mtu::agent::applier::{Applied, Applier};
use unbounded_mtu::agent::run::{self, Stop};
use unbounded_mtu::agent::source::Files;
use unbounded_mtu::agent::status::Status;
use unbounded_mtu::settings;

/// Sites a to e; n1 in a is peered with b and c (caps 1400); d and e are peered with each
/// other, and nothing of that peering is on n1's links, paths or their components. `wb_underlay`
/// is the underlay annotation of wb, n1's peer in b.
fn cluster(wb_underlay: Option<u32>, de_cap: u32) -> String {
    let site = |name: &str, cidr: &str| {
        format!(
            "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {{name: {name}}}\n\
             spec: {{nodeCidrs: [\"{cidr}\"]}}\n"
        )
    };
    let peering = |name: &str, a: &str, b: &str, cap: u32| {
        format!(
            "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SitePeering\n\
             metadata: {{name: {name}}}\nspec: {{sites: [{a}, {b}], tunnelMTU: {cap}}}\n"
        )
    };
    let node = |name: &str, site: &str, ip: &str, pods: &str| {
        let annotations = match (name, wb_underlay) {
            ("wb", Some(u)) => {
                format!("  annotations: {{mtu.unbounded-cloud.io/underlay-mtu: \"{u}\"}}\n")
            }
            _ => String::new(),
        };
        format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: \
             {{net.unbounded-cloud.io/site: {site}}}\n{annotations}status: {{addresses: \
             [{{type: InternalIP, address: {ip}}}]}}\nspec: {{podCIDRs: [\"{pods}\"]}}\n"
        )
    };
    [
        site("a", "10.0.0.0/16"),
        site("b", "10.1.0.0/16"),
        site("c", "10.2.0.0/16"),
        site("d", "10.3.0.0/16"),
        site("e", "10.4.0.0/16"),
        peering("ab", "a", "b", 1400),
        peering("ac", "a", "c", 1400),
        peering("de", "d", "e", de_cap),
        node("n1", "a", "10.0.0.5", "10.9.0.0/24"),
        node("wb", "b", "10.1.0.5", "10.9.1.0/24"),
        node("wc", "c", "10.2.0.5", "10.9.2.0/24"),
        node("wd", "d", "10.3.0.5", "10.9.3.0/24"),
        node("we", "e", "10.4.0.5", "10.9.4.0/24"),
    ]
    .join("---\n")
}

/// An applier over an in-memory kernel that keeps every apply's writes; detection reports
/// `underlay`.
struct Recording {
    dp: Mutex<Dataplane<FakeKernel>>,
    underlay: Option<u32>,
    applies: Mutex<Vec<Vec<Op>>>,
}

impl Recording {
    fn new(underlay: Option<u32>) -> Arc<Recording> {
        let mut k = FakeKernel::new();
        k.add_link("eth0", LinkKind::Other(String::new()), 1500);
        Arc::new(Recording {
            dp: Mutex::new(Dataplane::new(k, dataplane_linux::Settings::default())),
            underlay,
            applies: Mutex::new(Vec::new()),
        })
    }

    fn applies(&self) -> Vec<Vec<Op>> {
        self.applies.lock().expect("applies").clone()
    }
}

impl Applier for Recording {
    fn detect_underlay(
        &self,
        _: &DesiredState,
        _: &[std::net::IpAddr],
    ) -> dataplane_linux::Result<Option<u32>> {
        Ok(self.underlay)
    }

    fn apply(&self, desired: &DesiredState) -> dataplane_linux::Result<Applied> {
        let report = self.dp.lock().expect("kernel").reconcile(desired)?;
        let writes = report.writes.len();
        self.applies.lock().expect("applies").push(report.writes);
        Ok(Applied {
            writes,
            planned: Vec::new(),
            notes: report.notes,
            in_kernel: true,
        })
    }

    fn remove_owned(&self) -> dataplane_linux::Result<Applied> {
        let report = self.dp.lock().expect("kernel").remove_owned()?;
        Ok(Applied {
            writes: report.writes.len(),
            planned: Vec::new(),
            notes: report.notes,
            in_kernel: true,
        })
    }
}

/// The agent's loop over the manifests in `dir` (polled every 20 ms) through `applier`.
struct Agent {
    status: Arc<Status>,
    edits: std::sync::atomic::AtomicUsize,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Agent {
    fn start(dir: &std::path::Path, extra: &[&str], applier: Arc<Recording>) -> Agent {
        let dir = dir.display().to_string();
        let mut args = vec!["--node-name", "n1", "--manifests", &dir];
        args.extend_from_slice(extra);
        let mut s =
            settings::Agent::from_args(&support::parse_agent_args(&args)).expect("settings");
        s.debounce = Duration::from_millis(10);
        s.resync = Duration::from_secs(3600);
        let settings::Source::Manifests { paths, .. } = &s.source else {
            panic!("manifests")
        };
        let mut files = Files::new(paths.clone(), Duration::from_millis(20));
        let status = Arc::new(Status::default());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let st = status.clone();
        let task = tokio::spawn(async move {
            let stop = Stop::on(async move {
                let _ = rx.await;
            });
            let _ = run::run(&s, &mut files, applier, &st, stop).await;
        });
        Agent {
            status,
            edits: std::sync::atomic::AtomicUsize::new(0),
            stop: Some(tx),
            task,
        }
    }

    fn last(&self) -> Value {
        self.status.document()["lastReconcile"].clone()
    }

    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}

/// What the turn for one change of the manifests did.
#[derive(Debug)]
enum Done {
    /// It applied these writes; the `/status` detail of the turn.
    Applied(Vec<Op>, Value),
    /// The change could not reach the node's plan: it resolved nothing and wrote nothing.
    Unreached,
}

/// Turns counted by `/metrics` with this result.
fn turns(agent: &Agent, result: &str) -> usize {
    let prefix = format!("unbounded_mtu_reconciles_total{{result=\"{result}\"}} ");
    agent
        .status
        .metrics()
        .lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
        .unwrap_or(0)
}

/// Rewrites the manifests (a new size, whatever the modification time's resolution: a comment
/// at the end) and waits for the one turn that follows.
async fn change(dir: &std::path::Path, yaml: &str, applier: &Recording, agent: &Agent) -> Done {
    let (applied, unreached) = (applier.applies().len(), turns(agent, "unreached"));
    let edit = agent
        .edits
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    // At the end: lines before it keep their numbers, which the plan's explanations cite.
    std::fs::write(
        dir.join("cluster.yaml"),
        format!("{yaml}{}\n", "#".repeat(edit + 1)),
    )
    .expect("write");
    assert!(
        support::until_real(
            || applier.applies().len() > applied || turns(agent, "unreached") > unreached,
            Duration::from_secs(10)
        )
        .await,
        "no turn followed the change; status {:#}",
        agent.last()
    );
    // Nothing else follows a single change.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let applies = applier.applies();
    match (
        applies.len() - applied,
        turns(agent, "unreached") - unreached,
    ) {
        (1, 0) => Done::Applied(applies[applied].clone(), agent.last()),
        (0, 1) => Done::Unreached,
        other => panic!("one turn per change, found (applied, unreached) {other:?}"),
    }
}

/// Destination → MTU of every route of the in-memory kernel's table.
fn route_mtus(applier: &Recording) -> std::collections::BTreeMap<String, Option<u32>> {
    let dp = applier.dp.lock().expect("kernel");
    dp.kernel()
        .state
        .routes
        .iter()
        .map(|r| (r.destination.to_string(), r.mtu))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrelated_event_writes_nothing_and_a_related_one_writes_only_the_changed_routes() {
    let dir = support::tmpdir("turns-writes");
    std::fs::write(dir.join("cluster.yaml"), cluster(None, 1400)).expect("write");
    let applier = Recording::new(None);
    let agent = Agent::start(&dir, &["--underlay-mtu", "1500"], applier.clone());
    assert!(
        support::until_real(|| applier.applies().len() == 1, Duration::from_secs(10)).await,
        "no first turn: {:#}",
        agent.last()
    );
    assert!(!applier.applies()[0].is_empty(), "the first turn installs");
    let installed = route_mtus(&applier);

    // The d–e peering's cap: on no link, path or component of n1. The turn ends before any
    // topology is built, with nothing written.
    let done = change(&dir, &cluster(None, 1280), &applier, &agent).await;
    assert!(matches!(done, Done::Unreached), "{done:?}");
    assert_eq!(route_mtus(&applier), installed);

    // wb's underlay (1400 − GENEVE 58) binds n1's link to wb, and only that link: the device
    // keeps the largest link MTU (c's 1400), and only the route to wb's pods changes.
    let Done::Applied(writes, detail) =
        change(&dir, &cluster(Some(1400), 1280), &applier, &agent).await
    else {
        panic!("a change of n1's link resolved nothing");
    };
    let after = route_mtus(&applier);
    let changed: Vec<&String> = installed
        .iter()
        .filter(|(dst, mtu)| after.get(*dst) != Some(mtu))
        .map(|(dst, _)| dst)
        .collect();
    assert_eq!(
        changed,
        vec!["10.9.1.0/24"],
        "before {installed:?}, after {after:?}"
    );
    assert_eq!(after["10.9.1.0/24"], Some(1342));
    let written: Vec<String> = writes
        .iter()
        .map(|op| match op {
            Op::ReplaceRoute(r) => r.destination.to_string(),
            other => panic!("a write other than the changed route: {other}"),
        })
        .collect();
    assert_eq!(written, vec!["10.9.1.0/24"], "{writes:?}");
    assert_eq!(detail["writes"], 1, "{detail:#}");
    agent.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_plans_once_and_again_only_when_detection_contradicts_the_assumed_underlay() {
    let dir = support::tmpdir("turns-plans");
    std::fs::write(dir.join("cluster.yaml"), cluster(None, 1400)).expect("write");
    // Detection finds 1350, not the default the first turn assumes.
    let applier = Recording::new(Some(1350));
    let agent = Agent::start(&dir, &["--detect-underlay"], applier.clone());
    assert!(
        support::until_real(|| applier.applies().len() == 1, Duration::from_secs(10)).await,
        "no first turn: {:#}",
        agent.last()
    );
    assert_eq!(agent.last()["plans"], 2, "{:#}", agent.last());
    // Later turns assume what the last one detected: one plan each.
    for wb_underlay in [1480, 1490] {
        let done = change(&dir, &cluster(Some(wb_underlay), 1400), &applier, &agent).await;
        let Done::Applied(_, detail) = done else {
            panic!("wb's underlay is on n1's link: {done:?}");
        };
        assert_eq!(detail["plans"], 1, "{detail:#}");
        assert_eq!(detail["result"], "ok", "{detail:#}");
    }
    // The detected underlay is the one in force (below both of wb's): 1350 − GENEVE 58.
    assert_eq!(route_mtus(&applier)["10.9.1.0/24"], Some(1292));

    // With a stated underlay nothing is detected and every turn plans once.
    let dir2 = support::tmpdir("turns-plans-stated");
    std::fs::write(dir2.join("cluster.yaml"), cluster(None, 1400)).expect("write");
    let stated = Recording::new(Some(1350));
    let agent2 = Agent::start(&dir2, &["--underlay-mtu", "1450"], stated.clone());
    assert!(
        support::until_real(|| stated.applies().len() == 1, Duration::from_secs(10)).await,
        "no first turn: {:#}",
        agent2.last()
    );
    assert_eq!(agent2.last()["plans"], 1, "{:#}", agent2.last());
    assert_eq!(route_mtus(&stated)["10.9.1.0/24"], Some(1392));
    agent.stop().await;
    agent2.stop().await;
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(dir2);
}

/// A SitePeering of Sites d and e as the API serves it, at resource version `rv`.
fn peering_de(rv: &str, sites: [&str; 2], cap: u32) -> Value {
    serde_json::json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "SitePeering",
        "metadata": {"name": "de", "resourceVersion": rv},
        "spec": {"sites": sites, "tunnelMTU": cap}})
}

/// In API mode, through the watches: a watch event that changes a cap outside the node's plan
/// ends its turn unreached (no plan, no apply), one that changes a relationship resolves and
/// applies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_api_mode_an_unrelated_watch_event_resolves_nothing() {
    use support::{Mock, NODE, POD, Reply};
    use topology_core::vocab::Kind;
    use unbounded_mtu::k8s::ResourceKind;
    let mock = Mock::start().await;
    mock.on(
        "GET",
        NODE,
        vec![Reply::Json(200, support::own_node("100", ""))],
    );
    support::hold_startup_watch(&mock);
    mock.on("PATCH", POD, vec![support::pod_patched("agent-x")]);
    mock.on("PATCH", NODE, vec![support::node_patched()]);
    let n2 = support::node(
        "n2",
        "u2",
        "3",
        serde_json::json!({support::SITE_LABEL: "a"}),
        "10.0.0.6",
    );
    let slice = serde_json::json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1",
        "kind": "SiteNodeSlice", "metadata": {"name": "a-0"}, "siteName": "a",
        "nodes": [{"name": "n2", "internalIPs": ["10.0.0.6"], "podCIDRs": ["10.200.2.0/24"]}]});
    support::serve_collections(
        &mock,
        &[
            support::site("a", "10.0.0.0/16"),
            support::site("d", "10.3.0.0/16"),
            support::site("e", "10.4.0.0/16"),
            support::own_node("100", ""),
            n2,
            slice,
            peering_de("10", ["d", "e"], 1400),
        ],
    );
    let peerings = support::path(ResourceKind::of(Kind::SitePeering));
    let ch = mock.live_channel();
    mock.replace_watch(&peerings, vec![Reply::Live(ch)]);
    let fake = Arc::new(support::FakeApplier::default());
    let status = Arc::new(Status::default());
    let (_task, stop) = support::spawn_agent(
        &mock,
        support::agent_args(&["--underlay-mtu", "1500"]),
        status.clone(),
        Some(fake.clone()),
    );
    let calls = || fake.calls.load(std::sync::atomic::Ordering::SeqCst);
    let counted = |result: &str| {
        let prefix = format!("unbounded_mtu_reconciles_total{{result=\"{result}\"}} ");
        status
            .metrics()
            .lines()
            .find_map(|l| l.strip_prefix(&prefix)?.trim().parse::<usize>().ok())
            .unwrap_or(0)
    };
    assert!(
        support::until_real(|| calls() == 1, Duration::from_secs(10)).await,
        "first reconcile: {:#?}",
        mock.requests()
    );

    mock.push(
        ch,
        support::event("MODIFIED", peering_de("11", ["d", "e"], 1300)),
    );
    assert!(
        support::until_real(|| counted("unreached") == 1, Duration::from_secs(10)).await,
        "{}",
        status.metrics()
    );
    assert_eq!(calls(), 1, "an unreached turn applied");

    // d–e now takes Site a in: a relationship changed, so the turn resolves and applies.
    mock.push(
        ch,
        support::event("MODIFIED", peering_de("12", ["a", "d"], 1300)),
    );
    assert!(
        support::until_real(|| calls() == 2, Duration::from_secs(10)).await,
        "{}",
        status.metrics()
    );
    assert_eq!(counted("unreached"), 1);
    let _ = stop.send(());
}

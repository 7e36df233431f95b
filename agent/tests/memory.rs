//! The agent's resident memory on the standard cluster (`docs/performance.md`, "Agent memory";
//! the DaemonSet's memory request and limit come from it). The agent binary runs in API mode
//! (`--dry-run`: no dataplane) against the scripted API server serving the standard cluster as a
//! cluster would: every Site, peering, assignment, pool and pool peering; a SiteNodeSlice per Site
//! listing its workers; each pool's gateways in its `status.nodes`; every Node's metadata. Its
//! resident set is read from `/proc` once it is ready (the first reconcile done) and again after a
//! few seconds of steady state. A measurement, not a check, so it runs only when asked:
//!
//! ```sh
//! cargo run --release -p benches --example profile -- yaml > /tmp/standard.yaml
//! STANDARD_CLUSTER=/tmp/standard.yaml \
//!   cargo test --release -p agent --test memory -- --ignored --nocapture
//! ```

mod support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::{End, Mock, Reply};

const BIN: &str = env!("CARGO_BIN_EXE_unbounded-mtu");
const API: &str = "net.unbounded-cloud.io/v1alpha1";
const SITE_LABEL: &str = "net.unbounded-cloud.io/site";
/// The label by which the standard cluster's pools select their gateways.
const GATEWAY_SELECTOR: &str = "scale.unbounded-cloud.io/gateway-for";

/// The addresses and pod CIDRs of a Node, as a SiteNodeSlice or pool status entry lists them.
fn entry(n: &Value) -> Value {
    let ips = |ty: &str| -> Vec<Value> {
        n["status"]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["type"] == ty)
            .map(|a| a["address"].clone())
            .collect()
    };
    json!({
        "name": n["metadata"]["name"],
        "siteName": n["metadata"]["labels"][SITE_LABEL],
        "internalIPs": ips("InternalIP"),
        "externalIPs": ips("ExternalIP"),
        "podCIDRs": n["spec"]["podCIDRs"],
    })
}

/// The cluster the API server holds for the standard cluster's objects: Nodes become metadata
/// (what the agent's metadata-only watch receives), SiteNodeSlices and pool statuses are made
/// from them. Returns the objects and the full Nodes by name.
fn cluster(objects: Vec<Value>) -> (Vec<Value>, BTreeMap<String, Value>) {
    let mut out = Vec::new();
    let mut nodes = BTreeMap::new();
    let mut slices: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut gateways: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for o in objects {
        if o["kind"] != "Node" {
            out.push(o);
            continue;
        }
        let name = o["metadata"]["name"].as_str().expect("name").to_string();
        let labels = &o["metadata"]["labels"];
        match labels[GATEWAY_SELECTOR].as_str() {
            Some(pool) => gateways.entry(pool.into()).or_default().push(entry(&o)),
            None => slices
                .entry(labels[SITE_LABEL].as_str().expect("a Site").into())
                .or_default()
                .push(entry(&o)),
        }
        let mut meta = json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "1",
                "labels": labels}});
        if let Some(a) = o["metadata"].get("annotations") {
            meta["metadata"]["annotations"] = a.clone();
        }
        // Served as kind Node so the collection helper files it under /api/v1/nodes.
        meta["kind"] = json!("Node");
        out.push(meta);
        let mut full = o.clone();
        full["metadata"]["uid"] = json!(format!("uid-{name}"));
        full["metadata"]["resourceVersion"] = json!("1");
        nodes.insert(name, full);
    }
    for (site, entries) in slices {
        out.push(json!({"apiVersion": API, "kind": "SiteNodeSlice",
            "metadata": {"name": format!("{site}-0")}, "siteName": site, "nodes": entries}));
    }
    for o in out.iter_mut().filter(|o| o["kind"] == "GatewayPool") {
        let name = o["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        o["status"] = json!({"nodes": gateways.remove(&name).unwrap_or_default()});
    }
    (out, nodes)
}

/// `VmRSS` and `VmHWM` of `pid`, in KiB.
fn rss_kib(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let field = |k: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("a /proc field")
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU time (user + system) `pid` has used, from `/proc/PID/stat` (in USER_HZ = 100 ticks/s).
fn cpu_time(pid: u32) -> Duration {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    // Fields after the command name (which may hold spaces, so split after its closing paren).
    let rest = text.rsplit_once(") ").map(|(_, r)| r).expect("a stat line");
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    Duration::from_millis((f[11] + f[12]) * 10)
}

/// Runs the agent as `node` until ready; prints and returns (ready RSS, steady RSS, peak), KiB.
async fn measure(mock: &Mock, full: &Value, label: &str) -> (u64, u64, u64) {
    let name = full["metadata"]["name"].as_str().expect("name");
    mock.on(
        "GET",
        &format!("/api/v1/nodes/{name}"),
        vec![Reply::Json(200, full.clone())],
    );
    mock.on_watch_selected(
        "/api/v1/nodes",
        &format!("metadata.name={name}"),
        vec![Reply::Watch(vec![], End::Hold)],
    );
    let dir = std::env::temp_dir().join(format!("unbounded-mtu-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmpdir");
    let kc = mock.kubeconfig(&dir);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a port")
        .port();
    let mut child = tokio::process::Command::new(BIN)
        .args([
            "agent",
            "--dry-run",
            "--status-address",
            "off",
            "--node-name",
            name,
        ])
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env("RUST_LOG", "warn")
        // The allocator's settings, read from deploy/daemonset.yaml.
        .envs(support::daemonset_allocator_env())
        .env_remove("POD_NAME")
        .env_remove("POD_NAMESPACE")
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the agent");
    let pid = child.id().expect("pid");
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
    let started = Instant::now();
    loop {
        let ready = tokio::time::timeout(Duration::from_secs(5), async {
            tokio::net::TcpStream::connect(addr).await.ok()?;
            Some(support::http_get(addr, "/readyz").await)
        })
        .await
        .ok()
        .flatten()
        .is_some_and(|r| r.starts_with("HTTP/1.1 200"));
        if ready {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "{label}: not ready"
        );
        assert!(child.try_wait().expect("wait").is_none(), "{label}: exited");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = started.elapsed();
    let (ready, _) = rss_kib(pid);
    let cpu_ready = cpu_time(pid);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (steady, peak) = rss_kib(pid);
    let cpu_idle = cpu_time(pid).saturating_sub(cpu_ready);
    child.kill().await.expect("kill");
    let _ = std::fs::remove_dir_all(dir);
    println!(
        "{label} {name}: ready after {took:.1?} ({cpu_ready:?} CPU); RSS at ready {:.1} MiB, after 10 s {:.1} MiB ({cpu_idle:?} CPU in those 10 s), peak {:.1} MiB",
        ready as f64 / 1024.0,
        steady as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    (ready, steady, peak)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: needs STANDARD_CLUSTER (see the module documentation)"]
async fn resident_memory_on_the_standard_cluster() {
    let path =
        std::env::var("STANDARD_CLUSTER").expect("STANDARD_CLUSTER=<the standard cluster YAML>");
    let (objects, nodes) = cluster(support::yaml_documents(std::path::Path::new(&path)));
    let mock = Mock::start().await;
    support::serve_collections(&mock, &objects);
    let gateway = nodes
        .values()
        .find(|n| n["metadata"]["labels"].get(GATEWAY_SELECTOR).is_some())
        .expect("a gateway");
    let worker = nodes
        .values()
        .find(|n| n["metadata"]["labels"].get(GATEWAY_SELECTOR).is_none())
        .expect("a worker");
    let mut peak = 0;
    for (label, n) in [("worker", worker), ("gateway", gateway)] {
        let (_, _, p) = measure(&mock, n, label).await;
        peak = peak.max(p);
    }
    // The DaemonSet's memory limit holds the peak with room to spare.
    let limit = support::deploy_objects()
        .iter()
        .find(|o| o["kind"] == "DaemonSet")
        .and_then(|d| {
            d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]
                .as_str()
                .map(str::to_string)
        })
        .expect("a memory limit");
    let limit_mib: u64 = limit
        .strip_suffix("Mi")
        .and_then(|m| m.parse().ok())
        .expect("a limit in Mi");
    assert!(
        peak / 1024 < limit_mib / 2,
        "peak {peak} KiB against a limit of {limit}"
    );
}

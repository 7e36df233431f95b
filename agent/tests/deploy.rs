//! The kustomize base in `deploy/` as an operator applies it (`kubectl apply -k deploy/`): the
//! DaemonSet asks for NET_ADMIN and nothing more, runs read-only and confined, mounts only what
//! the agent writes, runs the image the Dockerfile builds, and its settings name only variables
//! the agent reads. (`kubernetes-validate --strict` checks the rendered objects' schemas in CI.)

mod support;

use serde_json::Value;
use std::collections::BTreeSet;

fn objects() -> Vec<Value> {
    support::deploy_objects()
}

fn daemonset(objects: &[Value]) -> &Value {
    let ds: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "DaemonSet")
        .collect();
    assert_eq!(ds.len(), 1, "one DaemonSet");
    ds[0]
}

fn container(ds: &Value) -> &Value {
    let cs = ds["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(cs.len(), 1, "one container");
    assert!(
        ds["spec"]["template"]["spec"]
            .get("initContainers")
            .is_none(),
        "no init containers"
    );
    &cs[0]
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn the_container_adds_only_net_admin_drops_all_and_runs_read_only_under_runtime_default() {
    let objects = objects();
    let ds = daemonset(&objects);
    let sc = &container(ds)["securityContext"];
    assert_eq!(strings(&sc["capabilities"]["add"]), ["NET_ADMIN"]);
    assert_eq!(strings(&sc["capabilities"]["drop"]), ["ALL"]);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
    assert_ne!(sc["privileged"], true);
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    for k in ["hostPID", "hostIPC"] {
        assert_ne!(pod[k], true, "{k}");
    }
    let text: String = ["daemonset.yaml", "rbac.yaml", "settings.env"]
        .iter()
        .map(|f| std::fs::read_to_string(support::deploy_dir().join(f)).expect("read"))
        .collect();
    let without_comments: String = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!without_comments.contains("SYS_ADMIN"), "no SYS_ADMIN");
}

#[test]
fn it_mounts_only_the_cni_configuration_directory_it_writes() {
    let objects = objects();
    let ds = daemonset(&objects);
    let c = container(ds);
    let mounts = c["volumeMounts"].as_array().expect("mounts");
    assert_eq!(mounts.len(), 1, "{mounts:?}");
    assert_eq!(mounts[0]["mountPath"], "/etc/cni/net.d");
    assert_ne!(
        mounts[0]["readOnly"], true,
        "the agent writes the CNI configuration"
    );
    let volumes = ds["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    assert_eq!(volumes.len(), 1);
    assert_eq!(volumes[0]["name"], mounts[0]["name"]);
    assert_eq!(volumes[0]["hostPath"]["path"], "/etc/cni/net.d");
    // The CNI configuration the settings name lies in that directory.
    let settings = settings(&objects);
    let cni = settings["CNI_CONFIG"].as_str().expect("CNI_CONFIG");
    assert!(cni.starts_with("/etc/cni/net.d/"), "{cni}");
}

#[test]
fn it_runs_the_image_the_dockerfile_builds_at_the_workspace_version() {
    let objects = objects();
    let ds = daemonset(&objects);
    let version = env!("CARGO_PKG_VERSION");
    let c = container(ds);
    assert_eq!(c["image"], format!("unbounded-mtu:{version}"));
    assert_eq!(strings(&c["args"]), ["agent"]);
    let k = support::yaml_documents(&support::deploy_dir().join("kustomization.yaml"));
    let images = k[0]["images"].as_array().expect("images");
    assert_eq!(images.len(), 1);
    assert_eq!(images[0]["name"], "unbounded-mtu");
    assert_eq!(images[0]["newTag"], version);
    let dockerfile = std::fs::read_to_string(support::deploy_dir().join("../Dockerfile"))
        .expect("the Dockerfile");
    assert!(
        dockerfile.contains(&format!("docker build -t unbounded-mtu:{version}")),
        "the Dockerfile says how to build the tag the DaemonSet runs"
    );
    assert!(dockerfile.contains("ENTRYPOINT [\"/usr/local/bin/unbounded-mtu\"]"));
    assert!(dockerfile.contains("deploy/build-binary.sh"));
}

fn settings(objects: &[Value]) -> &serde_json::Map<String, Value> {
    objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .and_then(|c| c["data"].as_object())
        .expect("the settings ConfigMap")
}

#[test]
fn settings_and_environment_name_only_what_the_agent_reads() {
    use clap::CommandFactory;
    let cli = unbounded_mtu::cli::Cli::command();
    let agent = cli
        .get_subcommands()
        .find(|c| c.get_name() == "agent")
        .expect("the agent subcommand");
    let mut known: BTreeSet<String> = agent
        .get_arguments()
        .filter_map(|a| a.get_env())
        .map(|e| e.to_string_lossy().into_owned())
        .collect();
    known.insert("RUST_LOG".into());
    let objects = objects();
    let settings = settings(&objects);
    for k in settings.keys() {
        assert!(known.contains(k), "{k} is not an agent setting");
    }
    let ds = daemonset(&objects);
    let c = container(ds);
    assert_eq!(
        c["envFrom"][0]["configMapRef"]["name"],
        objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap")
            .map(|o| o["metadata"]["name"].clone())
            .unwrap_or_default()
    );
    // The variables for the allocator, not the agent: the ones `perf-budget` measures the
    // agent's memory with (`benches::memory::DAEMONSET_ENV`).
    let agent_env: Vec<&serde_json::Value> = c["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter(|e| {
            !e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("MIMALLOC_"))
        })
        .collect();
    let alloc_env = support::daemonset_allocator_env();
    assert_eq!(
        alloc_env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Vec<_>>(),
        [
            ("MIMALLOC_PURGE_DELAY", "0"),
            ("MIMALLOC_ARENA_EAGER_COMMIT", "0")
        ]
    );
    let env: Vec<(&str, &str)> = agent_env
        .into_iter()
        .map(|e| {
            (
                e["name"].as_str().expect("name"),
                e["valueFrom"]["fieldRef"]["fieldPath"]
                    .as_str()
                    .expect("from the downward API"),
            )
        })
        .collect();
    assert_eq!(
        env,
        [
            ("NODE_NAME", "spec.nodeName"),
            ("POD_NAME", "metadata.name"),
            ("POD_NAMESPACE", "metadata.namespace"),
            ("POD_UID", "metadata.uid"),
        ]
    );
    for (k, _) in env {
        assert!(known.contains(k), "{k}");
    }
    // Health and metrics on the container port the probes use; /status on localhost.
    let listen: std::net::SocketAddr = settings["LISTEN_ADDRESS"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("LISTEN_ADDRESS");
    assert_eq!(c["ports"][0]["containerPort"], listen.port());
    assert_eq!(c["livenessProbe"]["httpGet"]["port"], c["ports"][0]["name"]);
    // The kubelet restarts an agent whose loop has stalled (`/healthz`), and routes nothing to
    // one that has not applied a plan yet (`/readyz`).
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    let status: std::net::SocketAddr = settings["STATUS_ADDRESS"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("STATUS_ADDRESS");
    assert!(status.ip().is_loopback());
}

#[test]
fn every_object_of_the_base_is_in_the_daemonsets_namespace_or_cluster_scoped() {
    let objects = objects();
    let ns = daemonset(&objects)["metadata"]["namespace"].clone();
    for o in &objects {
        let cluster = matches!(
            o["kind"].as_str(),
            Some("ClusterRole" | "ClusterRoleBinding")
        );
        assert_eq!(cluster, o["metadata"]["namespace"].is_null(), "{o}");
        if !cluster {
            assert_eq!(o["metadata"]["namespace"], ns, "{o}");
        }
        for s in o["subjects"].as_array().into_iter().flatten() {
            assert_eq!(s["namespace"], ns, "{o}");
        }
    }
    let requests = &container(daemonset(&objects))["resources"]["requests"];
    assert!(requests["memory"].is_string() && requests["cpu"].is_string());
}

#[test]
fn the_metrics_components_scrape_the_pod_port_the_daemonset_serves() {
    let objects = objects();
    let ds = daemonset(&objects);
    let port = &container(ds)["ports"][0];
    let labels = &ds["spec"]["template"]["metadata"]["labels"];
    let components = support::deploy_dir().join("components");
    // The PodMonitor (no schema for kubernetes-validate): it selects the agents' pods and
    // scrapes the named pod port.
    let pm = support::yaml_documents(&components.join("pod-monitor/podmonitor.yaml"));
    assert_eq!(pm.len(), 1);
    assert_eq!(pm[0]["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(pm[0]["kind"], "PodMonitor");
    let selector = pm[0]["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels");
    assert!(!selector.is_empty());
    for (k, v) in selector {
        assert_eq!(&labels[k], v, "the pods carry {k}");
    }
    let endpoints = pm[0]["spec"]["podMetricsEndpoints"]
        .as_array()
        .expect("endpoints");
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0]["port"], port["name"]);
    assert_eq!(endpoints[0]["path"], "/metrics");
    // The annotation form names the same port and path.
    let k = support::yaml_documents(&components.join("scrape-annotations/kustomization.yaml"));
    let patch = k[0]["patches"][0]["patch"].as_str().expect("a patch");
    let port_number = port["containerPort"].as_u64().expect("a port");
    assert!(
        patch.contains(&format!("prometheus.io/port: \"{port_number}\"")),
        "{patch}"
    );
    assert!(patch.contains("prometheus.io/path: /metrics"), "{patch}");
    assert!(patch.contains("prometheus.io/scrape: \"true\""), "{patch}");
}

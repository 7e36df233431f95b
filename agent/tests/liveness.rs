//! `/healthz` as the kubelet reads it: the agent's loop over manifests, its pod port served over
//! HTTP, and a kernel whose apply hangs. While the loop reconciles, `/healthz` answers 200; once
//! a kernel call has held the loop for longer than three resync intervals it answers 503 and
//! says why; when the call returns, the agent is live again.

mod support;

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use unbounded_mtu::agent::applier::{Applied, Applier};
use unbounded_mtu::agent::run::{self, Stop, stall_after};
use unbounded_mtu::agent::source::Files;
use unbounded_mtu::agent::status::{self, Status};
use unbounded_mtu::settings;

const CLUSTER: &str = "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\n\
metadata: {name: a}\nspec: {nodeCidrs: [\"10.0.0.0/16\"]}\n---\napiVersion: v1\nkind: Node\n\
metadata:\n  name: n1\n  labels: {net.unbounded-cloud.io/site: a}\n\
status: {addresses: [{type: InternalIP, address: 10.0.0.5}]}\nspec: {podCIDRs: [\"10.9.0.0/24\"]}\n";

/// A kernel whose applies after the first hang while the gate is closed.
#[derive(Default)]
struct Hanging {
    /// Applies begun, and whether the gate is open.
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Hanging {
    fn applies(&self) -> usize {
        self.state.lock().expect("state").0
    }

    fn open(&self) {
        self.state.lock().expect("state").1 = true;
        self.changed.notify_all();
    }
}

impl Applier for Hanging {
    fn detect_underlay(
        &self,
        _: &dataplane_linux::DesiredState,
        _: &[std::net::IpAddr],
    ) -> dataplane_linux::Result<Option<u32>> {
        Ok(None)
    }

    fn apply(&self, _: &dataplane_linux::DesiredState) -> dataplane_linux::Result<Applied> {
        let mut g = self.state.lock().expect("state");
        g.0 += 1;
        if g.0 > 1 {
            while !g.1 {
                g = self.changed.wait(g).expect("state");
            }
        }
        Ok(Applied {
            in_kernel: true,
            ..Applied::default()
        })
    }

    fn remove_owned(&self) -> dataplane_linux::Result<Applied> {
        Ok(Applied::default())
    }
}

/// The status line and body of `GET path` at `addr`.
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read");
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split("\r\n\r\n").nth(1).unwrap_or_default().to_string();
    (code, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_fails_while_a_kernel_call_holds_the_loop_and_recovers_when_it_returns() {
    let dir = support::tmpdir("liveness");
    std::fs::write(dir.join("cluster.yaml"), CLUSTER).expect("write");
    let path = dir.display().to_string();
    let mut s = settings::Agent::from_args(&support::parse_agent_args(&[
        "--node-name",
        "n1",
        "--manifests",
        &path,
    ]))
    .expect("settings");
    s.resync = Duration::from_millis(500);
    let limit = stall_after(&s);
    assert_eq!(limit, Duration::from_millis(1500), "three resync intervals");
    let settings::Source::Manifests { paths, .. } = &s.source else {
        panic!("manifests")
    };
    let mut files = Files::new(paths.clone(), Duration::from_millis(20));
    let status = Arc::new(Status::default());
    let servers = status::start("127.0.0.1:0", "off", status.clone())
        .await
        .expect("servers");
    let healthz = servers.probes;
    assert_eq!(
        get(healthz, "/healthz").await.0,
        200,
        "live before the loop runs"
    );
    let kernel = Arc::new(Hanging::default());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (st, applier) = (status.clone(), kernel.clone());
    let task = tokio::spawn(async move {
        let stop = Stop::on(async move {
            let _ = rx.await;
        });
        run::run(&s, &mut files, applier, &st, stop).await
    });
    assert!(
        support::until_real(|| status.ready(), Duration::from_secs(10)).await,
        "the first reconcile: {:#}",
        status.document()
    );
    assert_eq!(get(healthz, "/healthz").await.0, 200, "reconciling");
    // The resync after the first reconcile applies again, and that apply hangs.
    assert!(
        support::until_real(|| kernel.applies() >= 2, Duration::from_secs(10)).await,
        "no second apply"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        get(healthz, "/healthz").await.0,
        200,
        "within the allowed time"
    );
    tokio::time::sleep(limit).await;
    let (code, body) = get(healthz, "/healthz").await;
    assert_eq!(code, 503, "{body}");
    assert!(
        body.starts_with("stalled: no reconcile started or finished for"),
        "{body}"
    );
    assert_eq!(
        get(healthz, "/readyz").await.0,
        200,
        "readiness is about the first reconcile, not the loop"
    );
    kernel.open();
    let mut live = false;
    for _ in 0..100 {
        if get(healthz, "/healthz").await.0 == 200 {
            live = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(live, "live again once the kernel call returned");
    let _ = tx.send(());
    let ended = tokio::time::timeout(Duration::from_secs(5), task).await;
    assert!(matches!(ended, Ok(Ok(Ok(_)))), "the loop stops: {ended:?}");
}

//! `/status` (this node's whole plan and the topology around it) does not leak: by default the
//! agent serves it on localhost only, while health and metrics stay on the pod port; an option
//! exposes it. The agent binary runs here in `--manifests --dry-run` mode (no API server, no
//! root) with its defaults.

mod support;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::path::Path;
use std::time::Duration;
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_unbounded-mtu");
/// `--status-address`'s default.
const DEFAULT_STATUS: &str = "127.0.0.1:9843";

/// An address of this machine other than 127.0.0.1, as the pod address is on a node (host
/// networking): the source address of the route to a documentation address (no packet is sent),
/// else 127.0.0.2 (on Linux every 127/8 address is local, and a socket bound to 127.0.0.1 does
/// not answer on it).
fn node_address() -> IpAddr {
    UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("192.0.2.1:9")?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
        .unwrap_or(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)))
}

/// A port free on every address right now.
fn free_port() -> u16 {
    TcpListener::bind("0.0.0.0:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The agent on the hub-and-spoke example with `extra` flags (no `STATUS_ADDRESS` or
/// `LISTEN_ADDRESS` from the environment).
fn spawn(extra: &[&str]) -> Child {
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/03-hub-and-spoke");
    let mut cmd = Command::new(BIN);
    cmd.args(["agent", "--node-name", "a1", "--dry-run", "--manifests"])
        .arg(manifests)
        .args(extra);
    for k in [
        "STATUS_ADDRESS",
        "LISTEN_ADDRESS",
        "MANIFESTS",
        "NODE_NAME",
        "DRY_RUN",
        "ONCE",
    ] {
        cmd.env_remove(k);
    }
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the agent")
}

/// The first line of the response to `GET path` at `addr`, or the connection error.
async fn status_line(addr: SocketAddr, path: &str) -> Result<String, std::io::Error> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect"))??;
    s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes())
        .await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    Ok(out.lines().next().unwrap_or_default().to_string())
}

/// Waits until `addr` answers `/healthz` (the servers start before the first reconcile).
async fn wait_up(child: &mut Child, addr: SocketAddr) {
    for _ in 0..500 {
        if status_line(addr, "/healthz")
            .await
            .is_ok_and(|l| l.contains(" 200 "))
        {
            return;
        }
        if let Ok(Some(st)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use tokio::io::AsyncReadExt;
                let _ = e.read_to_string(&mut err).await;
            }
            panic!("the agent exited ({st}): {err}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the agent never answered /healthz on {addr}");
}

#[tokio::test]
async fn by_default_status_is_on_localhost_only_and_health_is_on_the_pod_address() {
    let ip = node_address();
    let port = free_port();
    let mut agent = spawn(&["--listen", &format!("0.0.0.0:{port}")]);
    let pod = SocketAddr::new(ip, port);
    wait_up(&mut agent, pod).await;
    // The pod port: health and metrics, no status.
    assert!(
        status_line(pod, "/healthz")
            .await
            .expect("healthz")
            .contains(" 200 ")
    );
    assert!(
        status_line(pod, "/metrics")
            .await
            .expect("metrics")
            .contains(" 200 ")
    );
    let on_pod = status_line(pod, "/status").await.expect("answered");
    assert!(on_pod.contains(" 404 "), "{on_pod}");
    // Localhost: the status page.
    let local: SocketAddr = DEFAULT_STATUS.parse().expect("address");
    let on_local = status_line(local, "/status").await;
    assert!(
        on_local.as_ref().is_ok_and(|l| l.contains(" 200 ")),
        "/status on {local}: {on_local:?} (is something else holding {local}?)"
    );
    // The status port at the pod address: nothing listens there.
    let status_on_pod = SocketAddr::new(ip, local.port());
    let refused = status_line(status_on_pod, "/status").await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused),
        "{status_on_pod}: {refused:?}"
    );
    agent.kill().await.expect("kill");
}

#[tokio::test]
async fn status_address_exposes_it_on_its_own_port_or_on_the_pod_port() {
    let ip = node_address();
    // Its own port on every address.
    let (port, exposed) = (free_port(), free_port());
    let mut agent = spawn(&[
        "--listen",
        &format!("0.0.0.0:{port}"),
        "--status-address",
        &format!("0.0.0.0:{exposed}"),
    ]);
    wait_up(&mut agent, SocketAddr::new(ip, port)).await;
    let at = SocketAddr::new(ip, exposed);
    assert!(
        status_line(at, "/status")
            .await
            .expect("status")
            .contains(" 200 ")
    );
    assert!(
        status_line(at, "/healthz")
            .await
            .expect("answered")
            .contains(" 404 "),
        "the status listener serves /status alone"
    );
    agent.kill().await.expect("kill");
    // The pod port itself (the same address as --listen), through the environment.
    let port = free_port();
    let listen = format!("0.0.0.0:{port}");
    let mut cmd = spawn_env(&listen);
    let pod = SocketAddr::new(ip, port);
    wait_up(&mut cmd, pod).await;
    assert!(
        status_line(pod, "/status")
            .await
            .expect("status")
            .contains(" 200 ")
    );
    assert!(
        status_line(pod, "/readyz")
            .await
            .expect("readyz")
            .starts_with("HTTP/1.1")
    );
    cmd.kill().await.expect("kill");
}

/// The agent with `LISTEN_ADDRESS` and `STATUS_ADDRESS` both `listen`, from the environment.
fn spawn_env(listen: &str) -> Child {
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/03-hub-and-spoke");
    Command::new(BIN)
        .args(["agent", "--node-name", "a1", "--dry-run", "--manifests"])
        .arg(manifests)
        .env("LISTEN_ADDRESS", listen)
        .env("STATUS_ADDRESS", listen)
        .env_remove("NODE_NAME")
        .env_remove("ONCE")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the agent")
}

#[test]
fn the_defaults_keep_status_on_a_loopback_address() {
    let args = support::agent_args(&[]);
    let status: SocketAddr = args.status_address.parse().expect("an address");
    assert_eq!(args.status_address, DEFAULT_STATUS);
    assert!(status.ip().is_loopback());
    let listen: SocketAddr = args.listen.parse().expect("an address");
    assert!(listen.ip().is_unspecified(), "probes reach the pod port");
    assert_ne!(status.port(), listen.port());
}

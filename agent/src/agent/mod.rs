//! `unbounded-mtu agent`: the node agent (`agent.md`). Part 1: assignment adoption, the
//! startup-only own-Node watch, caches, a dry-run reconcile, the acknowledgment and gateway taint
//! removal. Applying the plan (the dataplane) is not wired yet: the agent runs with `--dry-run`.

pub mod ack;
pub mod adopt;
pub mod node_watch;
pub mod publish;
pub mod run;
pub mod startup;
pub mod status;
pub mod taint;

use crate::cli::{Encap, Family};
use crate::common::{ExitError, protocol};
use anyhow::{Context, Result};
use clap::Args;
use topology_core::net::LinkSettings;

/// `agent`: every flag is also an environment variable.
#[derive(Args, Debug, Clone)]
pub struct AgentArgs {
    /// This node's name (downward API).
    #[arg(long, env = "NODE_NAME", value_name = "NAME")]
    pub node_name: String,
    /// The agent's own Pod (the acknowledgment is written on it).
    #[arg(long, env = "POD_NAME", value_name = "NAME")]
    pub pod_name: Option<String>,
    /// The agent's own Pod's namespace.
    #[arg(long, env = "POD_NAMESPACE", value_name = "NAMESPACE")]
    pub pod_namespace: Option<String>,
    /// A kubeconfig file (default: the usual inference: $KUBECONFIG or ~/.kube/config, else the
    /// in-cluster service account).
    #[arg(
        long,
        env = "KUBECONFIG_PATH",
        value_name = "PATH",
        conflicts_with = "manifests"
    )]
    pub kubeconfig: Option<String>,
    /// Use the in-cluster service account.
    #[arg(long, env = "IN_CLUSTER", conflicts_with_all = ["kubeconfig", "manifests"])]
    pub in_cluster: bool,
    /// Read manifests from this path instead of an API server (re-read when they change).
    #[arg(long, env = "MANIFESTS", value_name = "PATH")]
    pub manifests: Option<String>,
    /// Configured `mtu` (0 = none).
    #[arg(long = "mtu", env = "MTU", value_name = "N", default_value_t = 0, value_parser = parse_cfg_mtu)]
    pub mtu: u32,
    /// Underlay MTU used until detection is wired (and for peers without the annotation).
    #[arg(long, env = "UNDERLAY_MTU", value_name = "N", default_value_t = 1500, value_parser = clap::value_parser!(u32).range(576..=65535))]
    pub underlay_mtu: u32,
    /// Outer (tunnel) IP family.
    #[arg(long, env = "TUNNEL_IP_FAMILY", value_enum, default_value = "IPv4")]
    pub tunnel_ip_family: Family,
    /// What `Auto` resolves to on links that cross public addresses.
    #[arg(long, env = "PUBLIC_ENCAP", value_enum, default_value = "WireGuard")]
    pub public_encap: Encap,
    /// What `Auto` resolves to elsewhere.
    #[arg(long, env = "PRIVATE_ENCAP", value_enum, default_value = "GENEVE")]
    pub private_encap: Encap,
    /// VXLAN network identifier.
    #[arg(long, env = "VXLAN_VNI", value_name = "N", default_value_t = 1)]
    pub vxlan_vni: u32,
    /// VXLAN UDP port.
    #[arg(long, env = "VXLAN_PORT", value_name = "N", default_value_t = 4789)]
    pub vxlan_port: u16,
    /// Routing table the agent owns.
    #[arg(long, env = "ROUTE_TABLE", value_name = "N", default_value_t = 100)]
    pub route_table: u32,
    /// Priority of the agent's policy rule.
    #[arg(long, env = "RULE_PRIORITY", value_name = "N", default_value_t = 100)]
    pub rule_priority: u32,
    /// Route protocol number of the agent's routes.
    #[arg(long, env = "ROUTE_PROTOCOL", value_name = "N", default_value_t = 250)]
    pub route_protocol: u8,
    /// Listen address of the health and metrics endpoints (`/healthz`, `/readyz`, `/metrics`):
    /// the pod port, reachable from the cluster.
    #[arg(
        long,
        env = "LISTEN_ADDRESS",
        value_name = "ADDR",
        default_value = "0.0.0.0:9842"
    )]
    pub listen: String,
    /// Listen address of `/status` (this node's whole plan and the topology around it):
    /// localhost only by default. The same address as `--listen` serves it on the pod port;
    /// `off` serves it nowhere.
    #[arg(
        long,
        env = "STATUS_ADDRESS",
        value_name = "ADDR",
        default_value = "127.0.0.1:9843"
    )]
    pub status_address: String,
    /// The agent's own Pod's UID (downward API `metadata.uid`): the Events the agent posts on its
    /// Pod name it, which `kubectl describe pod` matches on.
    #[arg(long, env = "POD_UID", value_name = "UID")]
    pub pod_uid: Option<String>,
    /// Apply to this network namespace.
    #[arg(long, env = "NETNS", value_name = "PATH")]
    pub netns: Option<String>,
    /// Print the plan, apply nothing.
    #[arg(long, env = "DRY_RUN")]
    pub dry_run: bool,
    /// One reconcile, then exit.
    #[arg(long, env = "ONCE")]
    pub once: bool,
    /// The pod bridge (none: the agent manages no pod-side state).
    #[arg(long, env = "BRIDGE", value_name = "NAME")]
    pub bridge: Option<String>,
    /// The CNI configuration whose `mtu` the agent owns (Sites that manage CNI only).
    #[arg(long, env = "CNI_CONFIG", value_name = "PATH")]
    pub cni_config: Option<std::path::PathBuf>,
    /// A pod to keep at the fabric MTU: NETNS_PATH:IFNAME (repeatable).
    #[arg(long = "pod", value_name = "NETNS:IFNAME")]
    pub pods: Vec<String>,
    /// Detect this node's underlay MTU from the kernel instead of `--underlay-mtu`.
    #[arg(long, env = "DETECT_UNDERLAY")]
    pub detect_underlay: bool,
}

impl AgentArgs {
    /// Solver settings.
    pub fn settings(&self) -> mtu_solver::Settings {
        mtu_solver::Settings {
            default_underlay: self.underlay_mtu,
            cfg_mtu: self.mtu,
            link: LinkSettings {
                public_encap: protocol(self.public_encap),
                private_encap: protocol(self.private_encap),
                ipv6_outer: self.tunnel_ip_family == Family::Ipv6,
            },
            ..Default::default()
        }
    }
}

fn parse_cfg_mtu(s: &str) -> Result<u32, String> {
    let v: u32 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if v == 0 || (576..=9000).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is outside 576..9000 (0 = none)"))
    }
}

/// How the agent's run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// SIGTERM, or `--once` done: exit 0.
    Done,
    /// The adopted assignment changed: exit 3.
    AssignmentChanged(String),
    /// The own Node was deleted: exit 4.
    NodeDeleted,
}

impl Exit {
    /// The process exit code.
    pub fn code(&self) -> u8 {
        match self {
            Exit::Done => 0,
            Exit::AssignmentChanged(_) => 3,
            Exit::NodeDeleted => 4,
        }
    }
}

/// Log to standard error in every mode (`RUST_LOG` filters, `info` by default): the agent's
/// warnings (a broken assignment, failed reconciles, watch errors) are its log.
fn init_logging() {
    // Fails only when a subscriber is installed already; that one logs then.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Entry point of the subcommand: runs the agent on a runtime of its own and maps the outcome
/// to the exit code (3 assignment changed, 4 Node deleted, 1 fatal error).
pub fn main(args: &AgentArgs) -> Result<()> {
    init_logging();
    if args.manifests.is_some() && !args.dry_run {
        // Files in, the Linux dataplane out: the manifests-mode loop applies through
        // dataplane-linux (`node_agent`).
        return crate::run_agent::main(args).map_err(|e| {
            if e.downcast_ref::<ExitError>().is_some() {
                e
            } else {
                anyhow::Error::new(ExitError {
                    code: 1,
                    message: format!("{e:#}"),
                })
            }
        });
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let outcome = rt.block_on(run::main(args));
    match outcome {
        Ok(Exit::Done) => Ok(()),
        Ok(e @ Exit::AssignmentChanged(_)) | Ok(e @ Exit::NodeDeleted) => {
            let message = match &e {
                Exit::AssignmentChanged(why) => format!("restarting: {why}"),
                _ => "the Node was deleted".to_string(),
            };
            Err(anyhow::Error::new(ExitError {
                code: e.code(),
                message,
            }))
        }
        Err(e) => Err(anyhow::Error::new(ExitError {
            code: 1,
            message: format!("{e:#}"),
        })),
    }
}

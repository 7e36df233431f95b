//! Settings: the one place where command-line structures (`cli.rs`, low level: what the user
//! typed) become the settings the commands run on (high level: solver, dataplane, fabric,
//! source). Nothing else reads `Common` or `AgentArgs` fields, so a flag means the same in every
//! command and every mode of the agent.

use crate::cli::{
    AgentArgs, Common, Encap, Family, LogFormat, Output, OutputArgs, ProbeFlags, ProbeMethod,
    SelectArgs,
};
use crate::dataplane::FabricOptions;
use crate::k8s::client;
use crate::output::{DataFormat, Format, TableStyle};
use crate::probe::runner::{self, MethodChoice};
use std::path::PathBuf;
use std::time::Duration;
use topology_core::net::LinkSettings;
use topology_core::select::{LabelSelectorError, NodeSelector};
use topology_core::vocab::Protocol;

/// The protocol an `--*-encap` option names.
pub fn protocol(e: Encap) -> Protocol {
    match e {
        Encap::WireGuard => Protocol::WireGuard,
        Encap::Geneve => Protocol::Geneve,
        Encap::Vxlan => Protocol::Vxlan,
        Encap::Ipip => Protocol::Ipip,
        Encap::None => Protocol::None,
    }
}

/// The solver flags every command shares.
struct SolverFlags {
    underlay_mtu: u32,
    mtu: u32,
    family: Family,
    public: Encap,
    private: Encap,
}

impl SolverFlags {
    fn settings(&self) -> mtu_solver::Settings {
        mtu_solver::Settings {
            default_underlay: self.underlay_mtu,
            cfg_mtu: self.mtu,
            link: LinkSettings {
                public_encap: protocol(self.public),
                private_encap: protocol(self.private),
                ipv6_outer: self.family == Family::Ipv6,
            },
            ..Default::default()
        }
    }
}

/// Solver settings of the offline commands.
pub fn offline(c: &Common) -> mtu_solver::Settings {
    SolverFlags {
        underlay_mtu: c.underlay_mtu,
        mtu: c.mtu,
        family: c.tunnel_ip_family,
        public: c.public_encap,
        private: c.private_encap,
    }
    .settings()
}

/// How an offline command prints (`-o`, `--no-headers`).
pub fn format(o: &OutputArgs) -> Format {
    let table = |wide| {
        Format::Table(TableStyle {
            headers: !o.no_headers,
            wide,
        })
    };
    match o.output {
        Output::Table => table(false),
        Output::Wide => table(true),
        Output::Json => Format::Data(DataFormat::Json),
        Output::Yaml => Format::Data(DataFormat::Yaml),
    }
}

/// The nodes a whole-cluster command acts on (`--site`, `--pool`, `-l`, `--node`): the
/// library's selector, its label selectors read here; names are checked against the topology
/// when it selects.
pub fn selector(s: &SelectArgs) -> Result<NodeSelector, SettingsError> {
    NodeSelector::parse(&s.sites, &s.pools, &s.selectors, &s.nodes).map_err(SettingsError::Selector)
}

/// Probe settings from the probe flags, probing from `netns` (default: the current
/// namespace).
pub fn probe(f: &ProbeFlags, netns: Option<PathBuf>) -> runner::Settings {
    runner::Settings {
        method: match f.probe_method {
            ProbeMethod::Auto => MethodChoice::Auto,
            ProbeMethod::Icmp => MethodChoice::Icmp,
            ProbeMethod::Udp => MethodChoice::Udp,
        },
        netns,
        attempts: f.probe_attempts,
        timeout: f.probe_timeout,
        spacing: f.probe_spacing,
        concurrency: usize::try_from(f.probe_concurrency).unwrap_or(1),
        deadline: f.probe_deadline,
    }
}

/// The agent's background probes (`--probe-interval`).
#[derive(Clone, Debug)]
pub struct Probing {
    /// How often the links are probed.
    pub interval: Duration,
    /// How probes are sent.
    pub run: runner::Settings,
    /// A probed underlay below the assumed one lowers the node's underlay
    /// (`--underlay-from-probe`).
    pub lower_underlay: bool,
    /// How long such a lowering lasts without a new probe confirming it.
    pub expiry: Duration,
}

/// Where the agent's own underlay MTU comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Underlay {
    /// Detected from the kernel towards the node's link peers (`--detect-underlay`).
    Detect,
    /// Stated by `--underlay-mtu`, used as if detected.
    Fixed(u32),
}

/// What the agent does with its plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Apply {
    /// Writes the kernel through dataplane-linux.
    Kernel,
    /// Prints the plan and logs the operations it would write (`--dry-run`); writes nothing to
    /// the kernel and publishes nothing that describes the kernel.
    DryRun,
}

/// Where the agent reads the cluster.
#[derive(Clone, Debug)]
pub enum Source {
    /// Manifests (files or directories), re-read when they change.
    Manifests {
        /// The paths.
        paths: Vec<String>,
        /// How often they are checked for changes.
        poll: Duration,
    },
    /// An API server.
    Api(client::Source),
}

/// The agent's own Pod (`POD_NAME`, `POD_NAMESPACE`, `POD_UID`): the acknowledgment and the
/// Events go there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID, which Events name so that `kubectl describe pod` finds them.
    pub uid: Option<String>,
}

/// Every setting of `unbounded-mtu agent`.
#[derive(Clone, Debug)]
pub struct Agent {
    /// This node's name.
    pub node: String,
    /// The agent's own Pod, when known.
    pub pod: Option<PodRef>,
    /// Where the cluster is read.
    pub source: Source,
    /// Solver settings (`default_underlay` is `--underlay-mtu`; the own underlay replaces it at
    /// each reconcile).
    pub solver: mtu_solver::Settings,
    /// The own underlay MTU.
    pub underlay: Underlay,
    /// Apply or dry run.
    pub apply: Apply,
    /// Dataplane settings (table, rule, protocol, VXLAN).
    pub dataplane: dataplane_linux::Settings,
    /// Apply inside this network namespace.
    pub netns: Option<PathBuf>,
    /// Pod-side options.
    pub fabric: FabricOptions,
    /// One reconcile, then exit.
    pub once: bool,
    /// Health and metrics listen address.
    pub listen: String,
    /// `/status` listen address (`off`: none).
    pub status_address: String,
    /// Log format.
    pub log_format: LogFormat,
    /// Debounce of input changes.
    pub debounce: Duration,
    /// Periodic resync.
    pub resync: Duration,
    /// Background probes of the node's links (`None`: off).
    pub probing: Option<Probing>,
    /// What the API source watches. No flag sets it: [`WatchScope::Everything`] is the
    /// pre-scoping agent that the API-load benchmark compares against.
    pub watches: WatchScope,
}

/// What the API source watches (`agent.md`, "Watch only what is needed").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WatchScope {
    /// The heavy kinds only while the node's role or its Site's assignments need them, and
    /// the metadata of the Nodes of the Sites its plan links into.
    #[default]
    Needed,
    /// Every kind and every Node's metadata, all the time, as agents did before watches were
    /// scoped.
    Everything,
}

/// A setting the flags cannot make.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// `--pod` without `NETNS_PATH:IFNAME`.
    #[error("--pod {0}: expected NETNS_PATH:IFNAME")]
    Pod(String),
    /// `--pod-name` without `--pod-namespace` or the other way round.
    #[error(
        "--pod-name and --pod-namespace go together (the acknowledgment is written on that Pod)"
    )]
    PodHalf,
    /// Dataplane settings the kernel cannot take.
    #[error(transparent)]
    Dataplane(dataplane_linux::Error),
    /// `-l` / `--selector` that is no label selector.
    #[error("--selector: {0}")]
    Selector(LabelSelectorError),
}

/// Input changes are debounced this long.
pub const DEBOUNCE: Duration = Duration::from_millis(200);
/// Periodic resync.
pub const RESYNC: Duration = Duration::from_secs(60);
/// `--manifests` are checked for changes this often.
pub const MANIFEST_POLL: Duration = Duration::from_secs(2);

impl Agent {
    /// The settings the agent's flags make.
    pub fn from_args(a: &AgentArgs) -> Result<Agent, SettingsError> {
        let mut pods = Vec::new();
        for p in &a.pods {
            let (ns, ifname) = p
                .rsplit_once(':')
                .filter(|(ns, i)| !ns.is_empty() && !i.is_empty())
                .ok_or_else(|| SettingsError::Pod(p.clone()))?;
            pods.push((ns.into(), ifname.to_string()));
        }
        let pod = match (&a.pod_namespace, &a.pod_name) {
            (Some(namespace), Some(name)) => Some(PodRef {
                namespace: namespace.clone(),
                name: name.clone(),
                uid: a.pod_uid.clone(),
            }),
            (None, None) => None,
            _ => return Err(SettingsError::PodHalf),
        };
        let dataplane = dataplane_linux::Settings {
            table: a.route_table,
            rule_priority: a.rule_priority,
            route_protocol: a.route_protocol,
            vxlan_vni: a.vxlan_vni,
            vxlan_port: a.vxlan_port,
            ..Default::default()
        };
        dataplane_linux::plan::validate_settings(&dataplane).map_err(SettingsError::Dataplane)?;
        let source = match &a.manifests {
            Some(m) => Source::Manifests {
                paths: vec![m.clone()],
                poll: MANIFEST_POLL,
            },
            None => Source::Api(client::Source {
                kubeconfig: a.kubeconfig.clone(),
                in_cluster: a.in_cluster,
                context: None,
            }),
        };
        Ok(Agent {
            node: a.node_name.clone(),
            pod,
            source,
            solver: SolverFlags {
                underlay_mtu: a.underlay_mtu,
                mtu: a.mtu,
                family: a.tunnel_ip_family,
                public: a.public_encap,
                private: a.private_encap,
            }
            .settings(),
            underlay: if a.detect_underlay {
                Underlay::Detect
            } else {
                Underlay::Fixed(a.underlay_mtu)
            },
            apply: if a.dry_run {
                Apply::DryRun
            } else {
                Apply::Kernel
            },
            dataplane,
            netns: a.netns.as_ref().map(PathBuf::from),
            fabric: FabricOptions {
                bridge: a.bridge.clone(),
                cni_config: a.cni_config.clone(),
                pods,
            },
            once: a.once,
            listen: a.listen.clone(),
            status_address: a.status_address.clone(),
            log_format: a.log_format,
            debounce: DEBOUNCE,
            resync: RESYNC,
            probing: a.probe_interval.map(|interval| Probing {
                interval,
                run: probe(&a.probe, a.netns.as_ref().map(PathBuf::from)),
                lower_underlay: a.underlay_from_probe,
                // Three runs may fail to confirm it, each taking up to its deadline.
                expiry: interval
                    .saturating_mul(3)
                    .saturating_add(a.probe.probe_deadline),
            }),
            watches: WatchScope::Needed,
        })
    }
}

//! Settings: the one place where command-line structures (`cli.rs`, low level: what the user
//! typed) become the settings the commands run on (high level: input, solver, output, dataplane,
//! fabric, source), as ripgrep turns its low-level arguments into high-level ones. Each command
//! has its settings type, made once here from its clap structure before the command runs; no
//! command reads a clap structure, so a flag means the same in every command and every mode of
//! the agent.

use crate::cli::{
    AgentArgs, Common, Encap, ExplainArgs, ExplainLevel, FailOn, Family, GraphArgs, GraphFormat,
    LogFormat, Output, OutputArgs, ProbeArgs, ProbeFailOn, ProbeFlags, ProbeMethod, ResolveArgs,
    SelectArgs, SummaryMode, WhatIfArgs,
};
use crate::dataplane::FabricOptions;
use crate::k8s::client;
use crate::output::{DataFormat, Format, TableStyle};
use crate::prober::{self, MethodChoice};
use mtu_solver::Explanations;
use mtu_solver::whatif::Mutation;
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

/// Where an offline command reads its objects.
#[derive(Clone, Debug)]
pub enum Input {
    /// The `-f` paths (`-` is standard input); empty when none was given, which loading refuses.
    Files(Vec<String>),
    /// A live cluster, read-only (`--kubeconfig`, `--context`, `--in-cluster`).
    Cluster(client::Source),
}

/// What every offline command shares: where it reads and how it resolves.
#[derive(Clone, Debug)]
pub struct Offline {
    /// Where the objects come from.
    pub input: Input,
    /// The solver's settings.
    pub solver: mtu_solver::Settings,
}

/// The input and solver settings of the offline commands.
fn offline(c: &Common) -> Offline {
    let input = if c.kubeconfig.is_some() || c.in_cluster || c.context.is_some() {
        Input::Cluster(client::Source {
            kubeconfig: c.kubeconfig.clone(),
            in_cluster: c.in_cluster,
            context: c.context.clone(),
        })
    } else {
        Input::Files(c.files.clone())
    };
    let solver = SolverFlags {
        underlay_mtu: c.underlay_mtu,
        mtu: c.mtu,
        family: c.tunnel_ip_family,
        public: c.public_encap,
        private: c.private_encap,
    }
    .settings();
    Offline { input, solver }
}

/// `resolve`'s settings.
#[derive(Clone, Debug)]
pub struct Resolve {
    /// Input and solver.
    pub offline: Offline,
    /// The nodes resolved.
    pub selector: NodeSelector,
    /// How the result is printed.
    pub format: Format,
    /// The severity that fails the command.
    pub fail_on: FailOn,
    /// A rollup instead of every node (`--summary`).
    pub summary: Option<SummaryMode>,
    /// How much of each value's explanation is printed (`--explain`).
    pub explanations: Explanations,
}

/// `resolve`'s settings from its flags.
pub fn resolve(a: &ResolveArgs) -> Result<Resolve, SettingsError> {
    Ok(Resolve {
        selector: selector(&a.select)?,
        offline: offline(&a.common),
        format: format(&a.out),
        fail_on: a.fail.fail_on,
        summary: a.summary,
        explanations: explanations(a.explain),
    })
}

/// `explain`'s settings.
#[derive(Clone, Debug)]
pub struct Explain {
    /// Input and solver.
    pub offline: Offline,
    /// The node explained (one).
    pub selector: NodeSelector,
    /// How the explanation is printed.
    pub format: Format,
    /// The severity that fails the command.
    pub fail_on: FailOn,
    /// Only the link to this peer (`--peer`).
    pub peer: Option<String>,
    /// Only the routes to this CIDR or address (`--destination`).
    pub destination: Option<String>,
    /// Forwarding paths listed per route (`--paths`).
    pub paths: usize,
}

/// `explain`'s settings from its flags.
pub fn explain(a: &ExplainArgs) -> Result<Explain, SettingsError> {
    Ok(Explain {
        selector: selector(&a.select)?,
        offline: offline(&a.common),
        format: format(&a.out),
        fail_on: a.fail.fail_on,
        peer: a.peer.clone(),
        destination: a.destination.clone(),
        paths: a.paths,
    })
}

/// A what-if mutation and the flag that asked for it (`--set SitePeering/ab=1300`), for
/// messages.
pub type Asked = (String, Mutation);

/// `what-if`'s settings.
#[derive(Clone, Debug)]
pub struct WhatIf {
    /// Input and solver.
    pub offline: Offline,
    /// The nodes whose changes are shown.
    pub selector: NodeSelector,
    /// How the answer is printed.
    pub format: Format,
    /// The severity that fails the command.
    pub fail_on: FailOn,
    /// The mutations, in command-line order.
    pub asked: Vec<Asked>,
    /// The input compared with instead of mutations (`--after`).
    pub after: Vec<String>,
    /// How much of each change's explanation is printed (`--explain`).
    pub explanations: Explanations,
    /// Every changed value below the digest: asked with `--details`, or the nodes shown
    /// restricted by a selector (a few nodes' values are read one by one).
    pub details: bool,
    /// Totals only (`--summary`).
    pub summary: bool,
}

/// `what-if`'s settings from its flags; `matches` (the subcommand's) give the mutation flags'
/// command-line order.
pub fn what_if(
    a: &WhatIfArgs,
    matches: Option<&clap::ArgMatches>,
) -> Result<WhatIf, SettingsError> {
    let asked = mutations(a, matches)?;
    let selector = selector(&a.select)?;
    Ok(WhatIf {
        details: a.details || !selector.is_empty(),
        selector,
        asked,
        offline: offline(&a.common),
        format: format(&a.out),
        fail_on: a.fail.fail_on,
        after: a.after.clone(),
        explanations: explanations(a.explain),
        summary: a.summary,
    })
}

/// Parses the mutation flags, in the order of the command line: clap collects each flag
/// separately, and `matches` (the `what-if` subcommand's) says where each value stood. Without
/// them the flags apply in the order of the table in `cli.md`. Each flag's value is read by the
/// library's textual form of a mutation, whose verb is the flag's name (`--set X` is `set X`).
fn mutations(
    a: &WhatIfArgs,
    matches: Option<&clap::ArgMatches>,
) -> Result<Vec<Asked>, SettingsError> {
    let agent_mtu: Vec<String> = a.agent_mtu.iter().map(u32::to_string).collect();
    let flags: [(&str, &[String]); 11] = [
        ("--set", &a.set),
        ("--clear", &a.clear),
        ("--disable", &a.disable),
        ("--enable", &a.enable),
        ("--add-member", &a.add_member),
        ("--remove-member", &a.remove_member),
        ("--demote", &a.demote),
        ("--promote", &a.promote),
        ("--underlay", &a.underlay),
        ("--agent-mtu", &agent_mtu),
        ("--path", &a.path),
    ];
    let mut order: Vec<(usize, Asked)> = Vec::new();
    for (flag, values) in flags {
        let verb = flag.trim_start_matches('-');
        let id = verb.replace('-', "_");
        for (nth, value) in values.iter().enumerate() {
            let asked = format!("{flag} {value}");
            let m: Mutation =
                format!("{verb} {value}")
                    .parse()
                    .map_err(|source| SettingsError::Mutation {
                        asked: asked.clone(),
                        source,
                    })?;
            let at = matches
                .and_then(|m| m.indices_of(&id))
                .and_then(|mut i| i.nth(nth))
                .unwrap_or(usize::MAX);
            order.push((at, (asked, m)));
        }
    }
    order.sort_by_key(|(at, _)| *at);
    Ok(order.into_iter().map(|(_, asked)| asked).collect())
}

/// `graph`'s settings.
#[derive(Clone, Debug)]
pub struct Graph {
    /// Input and solver.
    pub offline: Offline,
    /// The nodes whose Sites and pools are drawn.
    pub selector: NodeSelector,
    /// The severity that fails the command.
    pub fail_on: FailOn,
    /// DOT, SVG or a document.
    pub format: GraphFormat,
    /// One node's neighbourhood (`--around`).
    pub around: Option<String>,
}

/// `graph`'s settings from its flags.
pub fn graph(a: &GraphArgs) -> Result<Graph, SettingsError> {
    let selector = selector(&a.select)?;
    if a.around.is_some() && !selector.is_empty() {
        return Err(SettingsError::AroundWithSelector);
    }
    Ok(Graph {
        selector,
        offline: offline(&a.common),
        fail_on: a.fail.fail_on,
        format: a.format,
        around: a.around.clone(),
    })
}

/// `probe`'s settings.
#[derive(Clone, Debug)]
pub struct Probe {
    /// Input and solver.
    pub offline: Offline,
    /// How the report is printed.
    pub format: Format,
    /// The node whose links are probed.
    pub node: String,
    /// Only the links to these peers (`--peer`).
    pub peers: Vec<String>,
    /// How links are probed, and from which network namespace (`--netns`).
    pub run: prober::Settings,
    /// Probed from another namespace than this host's (`--netns`): the host check is skipped.
    pub elsewhere: bool,
    /// The verdicts that fail the command.
    pub fail_on: Vec<ProbeFailOn>,
}

/// `probe`'s settings from its flags.
pub fn probe_command(a: &ProbeArgs) -> Probe {
    Probe {
        offline: offline(&a.common),
        format: format(&a.out),
        node: a.node.clone(),
        peers: a.peers.clone(),
        run: probe(&a.probe, a.netns.clone()),
        elsewhere: a.netns.is_some(),
        fail_on: a.fail_on.clone(),
    }
}

/// How an offline command prints (`-o`, `--no-headers`).
fn format(o: &OutputArgs) -> Format {
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
fn selector(s: &SelectArgs) -> Result<NodeSelector, SettingsError> {
    NodeSelector::parse(&s.sites, &s.pools, &s.selectors, &s.nodes).map_err(SettingsError::Selector)
}

/// Probe settings from the probe flags, probing from `netns` (default: the current
/// namespace).
fn probe(f: &ProbeFlags, netns: Option<PathBuf>) -> prober::Settings {
    prober::Settings {
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
    pub run: prober::Settings,
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
    /// A what-if mutation flag whose value is no mutation.
    #[error("{asked}: {source}")]
    Mutation {
        /// The flag and its value.
        asked: String,
        /// Why it is no mutation.
        source: mtu_solver::whatif::ParseMutationError,
    },
    /// `graph --around` with node selectors.
    #[error(
        "--around draws one node's neighbourhood; it does not combine with --site, --pool, -l or --node"
    )]
    AroundWithSelector,
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

/// The library's level of explanation for `--explain`.
fn explanations(level: ExplainLevel) -> Explanations {
    match level {
        ExplainLevel::Full => Explanations::Full,
        ExplainLevel::Bound => Explanations::Bound,
    }
}

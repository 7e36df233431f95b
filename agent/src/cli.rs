//! Command-line definitions.

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Topology and MTU resolver for Kubernetes clusters that span many Sites.
///
/// Offline commands read manifests (Sites, GatewayPools, SitePeerings, SiteGatewayPoolAssignments,
/// GatewayPoolPeerings, GatewayPoolNodes, SiteNodeSlices and v1 Nodes, as `kubectl get -o yaml`
/// writes them) and compute, for every node, the largest safe MTU of every link, route, device and
/// of the pods, from the paths traffic really takes.
///
/// Output: a table by default, on a terminal and in a pipe alike; `-o json|yaml` prints one
/// document with `apiVersion: unbounded-mtu/v1alpha1` and a `kind` (`Resolution`,
/// `ResolutionSummary`, `Explanation`, `WhatIf`), described in docs/json.md.
///
/// Exit status: 0 a result was produced and no diagnostic reached `--fail-on` (default: error);
/// 1 one did (the result is still printed in full); 2 nothing could be read, an option is
/// wrong, a named node or object does not exist, or the input names Nodes but none resolved.
#[derive(Parser, Debug)]
#[command(
    name = "unbounded-mtu",
    version = crate::VERSION,
    long_version = crate::LONG_VERSION,
    propagate_version = true
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Resolve every MTU of every node (or of the selected ones).
    ///
    /// Nodes are selected by Site (--site), pool (--pool), label selector (-l) and name (--node):
    /// each flag repeatable, the values of one flag alternatives, flags of different kinds
    /// combined with AND (`--site A --site B -l zone=z1`: nodes of A or B labelled zone=z1).
    /// `explain`, `what-if` and `graph` select the same way.
    ///
    /// Example: unbounded-mtu resolve -f examples/04-transit-chain --node wa -o json
    Resolve(ResolveArgs),
    /// Explain why a node's values are what they are: every term, its source, the binding term,
    /// and the forwarding paths hop by hop, with the hop that binds each route marked.
    ///
    /// The node is named by --node, or by selectors (--site, --pool, -l) that match exactly one.
    ///
    /// Example: unbounded-mtu explain -f cluster/ --node wa --destination 10.103.0.0/16
    Explain(ExplainArgs),
    /// Ask what changes if the input changes: caps, relationships, members, gateways, underlays.
    ///
    /// Selectors (--site, --pool, -l, --node) restrict the changes printed to those of the
    /// selected nodes.
    ///
    /// Example: unbounded-mtu what-if -f cluster/ --set SitePeering/ab=1300 --disable GatewayPoolPeering/pa-pb
    WhatIf(WhatIfArgs),
    /// Draw Sites, pools, peerings and assignments with caps and resolved MTUs (DOT or SVG).
    ///
    /// Selectors (--site, --pool, -l, --node) restrict the picture to the Sites of the selected
    /// nodes, the pools those Sites are assigned or host gateways of (and the pools of selected
    /// gateways), and the relationships between what is drawn.
    ///
    /// Example: unbounded-mtu graph -f cluster/ --format svg > cluster.svg
    Graph(GraphArgs),
    /// Check a node's plan on the wire: the largest packet each link's path really carries,
    /// found without relying on ICMP errors, against what the plan sends.
    ///
    /// Run on the node (or with --netns): for every link, DF probes of the peer's underlay
    /// address from 576 bytes up to the local device's MTU, and through the tunnel to the peer's
    /// pod gateway around the link MTU. Verdicts: ok, black-hole (the plan sends more than the
    /// path carries), headroom (the path carries more than the plan assumed), unreachable.
    ///
    /// Example: unbounded-mtu probe -f cluster/ --node wa --fail-on black-hole
    Probe(ProbeArgs),
    /// Run the node agent (a DaemonSet on every node).
    ///
    /// Example: NODE_NAME=w1 unbounded-mtu agent --dry-run --once
    Agent(AgentArgs),
    /// Print a shell completion script.
    ///
    /// Example: unbounded-mtu completion bash > /etc/bash_completion.d/unbounded-mtu
    Completion(CompletionArgs),
    /// Print a manual page (roff), generated from the same definitions as `--help`: the
    /// command's, or a subcommand's; or write every page into a directory.
    ///
    /// Example: unbounded-mtu man resolve > unbounded-mtu-resolve.1 && man ./unbounded-mtu-resolve.1
    Man(ManArgs),
}

/// `man`.
#[derive(Args, Debug)]
pub struct ManArgs {
    /// The subcommand whose page to print (default: the command's own page).
    #[arg(value_enum, conflicts_with = "out_dir")]
    pub page: Option<ManPage>,
    /// Write every page (unbounded-mtu.1, unbounded-mtu-resolve.1, ...) into this directory
    /// instead, and list the files written.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<std::path::PathBuf>,
}

/// The subcommands with a manual page of their own.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManPage {
    /// `unbounded-mtu resolve`.
    Resolve,
    /// `unbounded-mtu explain`.
    Explain,
    /// `unbounded-mtu what-if`.
    WhatIf,
    /// `unbounded-mtu graph`.
    Graph,
    /// `unbounded-mtu probe`.
    Probe,
    /// `unbounded-mtu agent`.
    Agent,
    /// `unbounded-mtu completion`.
    Completion,
    /// `unbounded-mtu man`.
    Man,
}

/// `completion`.
#[derive(Args, Debug)]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Shells with completion scripts.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    /// Bash.
    Bash,
    /// Zsh.
    Zsh,
    /// Fish.
    Fish,
}

/// Output formats.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Aligned tables for people, at most 120 columns wide on ordinary names (the default, on a
    /// terminal and in a pipe alike).
    Table,
    /// Tables with the long columns too: every ECMP next hop, the full source of each bound,
    /// diagnostics one per line.
    Wide,
    /// JSON (what scripts ask for).
    Json,
    /// YAML.
    Yaml,
}

/// How a command prints its result (every command but `graph`, which draws).
#[derive(Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format (a table unless asked otherwise, also in a pipe, as kubectl does).
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: Output,
    /// Tables without their column headers (for `grep`, `awk` and `sort`).
    #[arg(long)]
    pub no_headers: bool,
}

/// Severities for `--fail-on`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    /// Exit 1 when any error diagnostic exists (part of the input was not read as written).
    Error,
    /// Exit 1 when any error or warning diagnostic exists.
    Warning,
    /// Exit 0 whatever the diagnostics.
    None,
}

/// Tunnel IP family.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// IPv4 outer headers.
    #[value(name = "IPv4", alias = "ipv4")]
    Ipv4,
    /// IPv6 outer headers.
    #[value(name = "IPv6", alias = "ipv6")]
    Ipv6,
}

/// Encapsulations `Auto` may resolve to.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encap {
    /// WireGuard (80 bytes).
    #[value(name = "WireGuard", alias = "wireguard")]
    WireGuard,
    /// GENEVE (58/78 bytes).
    #[value(name = "GENEVE", alias = "geneve")]
    Geneve,
    /// VXLAN (50/70 bytes).
    #[value(name = "VXLAN", alias = "vxlan")]
    Vxlan,
    /// IP in IP (20/40 bytes).
    #[value(name = "IPIP", alias = "ipip")]
    Ipip,
    /// No encapsulation.
    #[value(name = "None", alias = "none")]
    None,
}

/// Options every offline command takes.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Manifests: a file, a directory (walked recursively: files ending .yaml, .yml or .json in
    /// any letter case, hidden entries skipped; what is skipped is reported on standard error) or
    /// `-` for standard input (once). Repeatable.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub files: Vec<String>,
    /// Read the objects from a cluster (read-only LISTs) instead of files: this kubeconfig, or
    /// without a value `$KUBECONFIG`, then `~/.kube/config`, as kubectl does.
    #[arg(
        long,
        value_name = "PATH",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with_all = ["files", "in_cluster"]
    )]
    pub kubeconfig: Option<String>,
    /// The kubeconfig context to use (implies reading from the cluster; default: the current one).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["files", "in_cluster"])]
    pub context: Option<String>,
    /// Read the objects from the cluster this Pod runs in (read-only LISTs) instead of files.
    #[arg(long, conflicts_with = "files")]
    pub in_cluster: bool,
    /// Underlay MTU of nodes without the `mtu.unbounded-cloud.io/underlay-mtu` annotation.
    #[arg(long, value_name = "N", default_value_t = 1500, value_parser = clap::value_parser!(u32).range(576..=65535))]
    pub underlay_mtu: u32,
    /// The agent's configured `mtu` on every node (0 = none).
    #[arg(long = "mtu", value_name = "N", default_value_t = 0, value_parser = parse_cfg_mtu)]
    pub mtu: u32,
    /// Outer (tunnel) IP family: selects the overhead column.
    #[arg(long, value_enum, default_value = "IPv4")]
    pub tunnel_ip_family: Family,
    /// What `Auto` resolves to on links that cross public addresses.
    #[arg(long, value_enum, default_value = "WireGuard")]
    pub public_encap: Encap,
    /// What `Auto` resolves to elsewhere.
    #[arg(long, value_enum, default_value = "GENEVE")]
    pub private_encap: Encap,
}

/// `--fail-on` of the commands that report diagnostics.
#[derive(Args, Debug, Clone)]
pub struct FailOnArgs {
    /// Exit 1 when diagnostics of this severity (or worse) exist; the result is printed in
    /// full either way.
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: FailOn,
}

/// Which nodes a whole-cluster command (`resolve`, `explain`, `what-if`, `graph`) acts on.
/// Every flag is repeatable; the values of one flag are alternatives (a node matching any of
/// them), and flags of different kinds must all hold.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Node selection (flags of different kinds must all hold)")]
pub struct SelectArgs {
    /// Only nodes in this Site (repeatable or comma-separated: any of them).
    #[arg(long = "site", value_name = "NAME", value_delimiter = ',')]
    pub sites: Vec<String>,
    /// Only gateways of this GatewayPool (repeatable or comma-separated: any of them).
    #[arg(long = "pool", value_name = "NAME", value_delimiter = ',')]
    pub pools: Vec<String>,
    /// Only nodes whose labels match this Kubernetes label selector, in kubectl's syntax: `k=v`,
    /// `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (has the label), `!k` (has it not); a
    /// comma inside one selector means AND. Repeatable: any of them.
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selectors: Vec<String>,
    /// Only this node (repeatable or comma-separated: any of them).
    #[arg(long = "node", value_name = "NAME", value_delimiter = ',')]
    pub nodes: Vec<String>,
}

fn parse_cfg_mtu(s: &str) -> Result<u32, String> {
    let v: u32 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if v == 0 || (576..=9000).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is outside 576..9000 (0 = none)"))
    }
}

/// `resolve`.
#[derive(Args, Debug)]
pub struct ResolveArgs {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// How the result is printed.
    #[command(flatten)]
    pub out: OutputArgs,
    /// When to exit 1.
    #[command(flatten)]
    pub fail: FailOnArgs,
    /// A rollup of the whole cluster that fits a screen, for clusters too large to read value by
    /// value: nodes, Sites, pools and values counted; every distinct MTU with the nodes and
    /// values that carry it; the lowest fabric and route and where they are; the nodes at or
    /// below the IPv6 floor; the objects that bind the most values; diagnostics by code.
    /// `--summary=nodes` (or `-o wide`) adds one line per node (Site, role, pool, fabric MTU
    /// and what binds it, the lowest route MTU and its destination, number of links).
    #[arg(
        long,
        value_enum,
        value_name = "WHAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "rollup"
    )]
    pub summary: Option<SummaryMode>,
    /// `full` adds every term considered to each explanation.
    #[arg(long, value_enum, default_value = "bound")]
    pub explain: ExplainLevel,
    /// Which nodes to resolve (default: every node); last, as its help heading holds for the
    /// arguments after it.
    #[command(flatten)]
    pub select: SelectArgs,
}

/// What `resolve --summary` prints.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryMode {
    /// The rollup alone (`--summary`).
    Rollup,
    /// The rollup, then one line per node.
    Nodes,
}

/// Explanation detail.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExplainLevel {
    /// Only the binding term.
    Bound,
    /// Every term considered.
    Full,
}

/// `explain`.
#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// How the result is printed.
    #[command(flatten)]
    pub out: OutputArgs,
    /// When to exit 1.
    #[command(flatten)]
    pub fail: FailOnArgs,
    /// Only the link to this peer.
    #[arg(long, value_name = "NAME", conflicts_with = "destination")]
    pub peer: Option<String>,
    /// Only the route(s) to this CIDR, or covering this IP address.
    #[arg(long, value_name = "CIDR-or-IP")]
    pub destination: Option<String>,
    /// How many forwarding paths to show per route (their hops are listed, and the binding
    /// hops wherever they are).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub paths: usize,
    /// The node to explain: the selection must name exactly one (last, as its help heading
    /// holds for the arguments after it).
    #[command(flatten)]
    pub select: SelectArgs,
}

/// `what-if`.
#[derive(Args, Debug)]
pub struct WhatIfArgs {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// How the result is printed.
    #[command(flatten)]
    pub out: OutputArgs,
    /// When to exit 1.
    #[command(flatten)]
    pub fail: FailOnArgs,
    /// Set `tunnelMTU`: KIND/NAME=MTU.
    #[arg(long = "set", value_name = "KIND/NAME=MTU")]
    pub set: Vec<String>,
    /// Remove `tunnelMTU`: KIND/NAME.
    #[arg(long = "clear", value_name = "KIND/NAME")]
    pub clear: Vec<String>,
    /// Disable a SitePeering, SiteGatewayPoolAssignment or GatewayPoolPeering.
    #[arg(long = "disable", value_name = "KIND/NAME")]
    pub disable: Vec<String>,
    /// Enable a SitePeering, SiteGatewayPoolAssignment or GatewayPoolPeering.
    #[arg(long = "enable", value_name = "KIND/NAME")]
    pub enable: Vec<String>,
    /// Add a member: KIND/NAME=Site/X or KIND/NAME=GatewayPool/X.
    #[arg(long = "add-member", value_name = "KIND/NAME=KIND/X")]
    pub add_member: Vec<String>,
    /// Remove a member: KIND/NAME=Site/X or KIND/NAME=GatewayPool/X.
    #[arg(long = "remove-member", value_name = "KIND/NAME=KIND/X")]
    pub remove_member: Vec<String>,
    /// Demote a gateway to a worker.
    #[arg(long = "demote", value_name = "NODE")]
    pub demote: Vec<String>,
    /// Promote a node into a pool: NODE=POOL.
    #[arg(long = "promote", value_name = "NODE=POOL")]
    pub promote: Vec<String>,
    /// Change a node's underlay MTU: NODE=MTU.
    #[arg(long = "underlay", value_name = "NODE=MTU")]
    pub underlay: Vec<String>,
    /// Change the agent `mtu` of every node (0 = none).
    #[arg(long = "agent-mtu", value_name = "N", value_parser = parse_cfg_mtu)]
    pub agent_mtu: Option<u32>,
    /// Set what NODE's path-mtu annotation says about PEER (the probed path MTU bounding their
    /// link; 0 clears the entry): NODE=PEER:MTU.
    #[arg(long = "path", value_name = "NODE=PEER:MTU")]
    pub path: Vec<String>,
    /// Compare against a second set of manifests instead (file, directory or -).
    #[arg(long = "after", value_name = "PATH")]
    pub after: Vec<String>,
    /// `full` adds every term considered to each explanation.
    #[arg(long, value_enum, default_value = "bound")]
    pub explain: ExplainLevel,
    /// List every changed value, node by node, below the digest (the table shows totals and
    /// the changes grouped by kind, before -> after and binding term; JSON lists every value
    /// unless --summary).
    #[arg(long, conflicts_with = "summary")]
    pub details: bool,
    /// Totals only (values and nodes per kind of value); JSON keeps `summary` and `digest` and
    /// leaves out `changes`, for large clusters.
    #[arg(long)]
    pub summary: bool,
    /// Whose changes to print (default: every node's).
    #[command(flatten)]
    pub select: SelectArgs,
}

/// What makes `probe` exit 1.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeFailOn {
    /// An error diagnostic in the input.
    Error,
    /// An error or warning diagnostic in the input.
    Warning,
    /// Nothing: exit 0 whatever was found.
    None,
    /// A link whose path carries less than the plan sends.
    BlackHole,
    /// A link whose peer answered no probe.
    Unreachable,
}

/// How probes are sent.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeMethod {
    /// ICMP echo when the process may open a raw socket (CAP_NET_RAW), else UDP.
    Auto,
    /// ICMP echo requests (CAP_NET_RAW).
    Icmp,
    /// UDP to unused ports, answered by the peer's port-unreachable, as tracepath does (no
    /// privileges).
    Udp,
}

/// How links are probed (the `probe` command and the agent's background probes).
#[derive(Args, Debug, Clone)]
pub struct ProbeFlags {
    /// How probes are sent.
    #[arg(long, env = "PROBE_METHOD", value_enum, default_value = "auto")]
    pub probe_method: ProbeMethod,
    /// Tries per size before a size counts as not carried (one lost probe never lowers a
    /// result).
    #[arg(long, env = "PROBE_ATTEMPTS", value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10))]
    pub probe_attempts: u32,
    /// How long one probe waits for its answer (e.g. 300ms, 1s).
    #[arg(long, env = "PROBE_TIMEOUT", value_name = "DURATION", default_value = "300ms", value_parser = parse_duration)]
    pub probe_timeout: std::time::Duration,
    /// Pause between two probes of one link (the rate limit).
    #[arg(long, env = "PROBE_SPACING", value_name = "DURATION", default_value = "10ms", value_parser = parse_duration)]
    pub probe_spacing: std::time::Duration,
    /// Links probed at the same time.
    #[arg(long, env = "PROBE_CONCURRENCY", value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub probe_concurrency: u32,
    /// Bound on one whole probe run; links not finished by then report what they found so far.
    #[arg(long, env = "PROBE_DEADLINE", value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub probe_deadline: std::time::Duration,
}

/// A duration: a number with a unit (`ms`, `s`, `m`, `h`).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{s:?} has no unit (expected e.g. 300ms, 30s, 5m, 1h)"))?;
    let (n, unit) = s.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?} does not start with a number (expected e.g. 30s)"))?;
    let ms = match unit {
        "ms" => Some(n),
        "s" => n.checked_mul(1000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        _ => {
            return Err(format!(
                "{s:?}: unknown unit {unit:?} (expected ms, s, m or h)"
            ));
        }
    };
    ms.map(std::time::Duration::from_millis)
        .ok_or_else(|| format!("{s:?} is too long"))
}

/// `probe`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// How the report is printed.
    #[command(flatten)]
    pub out: OutputArgs,
    /// The node whose links are probed: the node this runs on (or whose namespace --netns
    /// names).
    #[arg(long = "node", value_name = "NAME", required = true)]
    pub node: String,
    /// Probe only the link to this peer (repeatable).
    #[arg(long = "peer", value_name = "NAME")]
    pub peers: Vec<String>,
    /// Probe from this network namespace (a path such as /run/netns/NAME).
    #[arg(long, value_name = "PATH")]
    pub netns: Option<std::path::PathBuf>,
    /// How links are probed.
    #[command(flatten)]
    pub probe: ProbeFlags,
    /// Exit 1 when any of these is found (comma-separated or repeated; the report is printed
    /// in full either way).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "error")]
    pub fail_on: Vec<ProbeFailOn>,
}

/// Graph formats.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphFormat {
    /// Graphviz DOT text.
    Dot,
    /// SVG rendered by Graphviz `dot`.
    Svg,
    /// The same facts as data: Sites and pools, relationships, MTUs and binding objects.
    Json,
    /// As `json`, in YAML.
    Yaml,
}

/// `graph`.
#[derive(Args, Debug)]
pub struct GraphArgs {
    /// Common options.
    #[command(flatten)]
    pub common: Common,
    /// When to exit 1.
    #[command(flatten)]
    pub fail: FailOnArgs,
    /// Output format (`-o` and `--output` name the same option).
    #[arg(
        short = 'o',
        long = "format",
        visible_alias = "output",
        value_enum,
        default_value = "dot"
    )]
    pub format: GraphFormat,
    /// Draw only NODE's neighbourhood: its Site, and the Sites and pools of the peers it has
    /// links to, with the relationships and routes between them (one hop).
    #[arg(long, value_name = "NODE")]
    pub around: Option<String>,
    /// Draw only the Sites of the selected nodes (default: every Site).
    #[command(flatten)]
    pub select: SelectArgs,
}

/// The agent's log format.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[value(name = "text")]
    Text,
    /// One JSON object per line (for log collectors).
    #[value(name = "json")]
    Json,
}

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
    /// This node's underlay MTU when it is not detected (`--detect-underlay`), and that of
    /// peers without the `mtu.unbounded-cloud.io/underlay-mtu` annotation. It counts as what the
    /// agent detected: it replaces the annotation on its own Node (which the agent publishes),
    /// capped by `underlay-mtu-max`.
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
    /// Log format on standard error (`RUST_LOG` filters, `info` by default).
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Probe this node's links on the wire in the background this often, and after each
    /// reconcile that changed a link (off by default; e.g. 5m). Needs CAP_NET_RAW for ICMP
    /// probes, nothing for UDP ones.
    #[arg(long, env = "PROBE_INTERVAL", value_name = "DURATION", value_parser = parse_duration)]
    pub probe_interval: Option<std::time::Duration>,
    /// Let probed paths below the plan lower it: a narrow peer's link through this node's
    /// `path-mtu` annotation, or the node's own underlay when every peer is narrow by the same
    /// amount (lowered only, never raised by a probe; each result expires after three probe
    /// intervals plus one probe deadline unless a new probe confirms it). Needs
    /// --probe-interval.
    #[arg(long, env = "UNDERLAY_FROM_PROBE", requires = "probe_interval")]
    pub underlay_from_probe: bool,
    /// How links are probed.
    #[command(flatten)]
    pub probe: ProbeFlags,
}

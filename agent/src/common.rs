//! What every offline command shares: loading, output and exit codes.

use crate::cli::FailOn;
use crate::settings::Input;
use anyhow::{Result, bail};
use topology_core::decode::Decoded;
use topology_core::diag::{Diagnostic, Severity};
use topology_core::ids::NodeId;
use topology_core::model::Topology;
use topology_core::select::NodeSelector;

/// A failure that maps to an exit status.
#[derive(Debug)]
pub struct ExitError {
    /// The exit status.
    pub code: u8,
    /// One line for standard error.
    pub message: String,
}

impl std::fmt::Display for ExitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExitError {}

/// An error and its causes on one line, each cause once ([`crate::k8s::error::one_line`]: a
/// cause whose text the line already ends with is not repeated, and a Kubernetes error is worded
/// as kubectl words it).
pub fn chain_text(e: &anyhow::Error) -> String {
    crate::k8s::error::one_line(e.as_ref())
}

/// `1 value`, `2 values`.
pub fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Exit 2 with a one-line reason.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(ExitError {
        code: 2,
        message: message.into(),
    })
}

/// Loads and decodes the inputs: the cluster with `--kubeconfig` / `--in-cluster` (read-only
/// LISTs), else the `-f` files; exit 2 when nothing could be read or decoded.
pub fn load(input: &Input) -> Result<Decoded> {
    let files = match input {
        Input::Files(files) => files,
        Input::Cluster(src) => {
            // Nothing could be read: the error's message is complete on one line (kubectl's
            // words for a server's answer, the URL of an unreachable server, the contexts that
            // exist).
            let decoded = crate::k8s::live::load(src).map_err(|e| usage(e.to_string()))?;
            if decoded.objects.is_empty() && decoded.diagnostics.is_empty() {
                bail!(usage(
                    "the cluster holds no objects of a kind this tool reads"
                ));
            }
            return Ok(decoded);
        }
    };
    if files.is_empty() {
        bail!(usage(
            "nothing to read: give -f PATH, --kubeconfig or --in-cluster"
        ));
    }
    load_files(files)
}

/// Loads and decodes files; exit 2 when nothing could be read or decoded.
pub fn load_files(paths: &[String]) -> Result<Decoded> {
    let decoded =
        mtu_solver::load::load(paths).map_err(|e| usage(chain_text(&anyhow::Error::new(e))))?;
    if decoded.objects.is_empty() {
        let first_error = decoded
            .diagnostics
            .iter()
            .find(|d| d.severity == Severity::Error)
            .map(|d| d.to_string());
        match first_error {
            Some(e) => bail!(usage(format!("nothing could be decoded: {e}"))),
            None => bail!(usage(format!(
                "no objects of a kind this tool reads in {}",
                paths.join(", ")
            ))),
        }
    }
    Ok(decoded)
}

/// Exit 2 when the input names nodes but none of them resolved, saying why.
pub fn some_resolved(topo: &Topology) -> Result<()> {
    match topo.none_resolved() {
        Some(why) => Err(usage(why.to_string())),
        None => Ok(()),
    }
}

/// The nodes `selector` selects in `topo`, sorted by name; exit 2 when it names a Site, pool or
/// node that `topo` does not hold, or when selectors were given and no node meets them (an
/// empty result would read as a cluster without nodes).
pub fn select(topo: &Topology, selector: &NodeSelector) -> Result<Vec<NodeId>> {
    let nodes = selector.select(topo).map_err(|e| usage(e.to_string()))?;
    if nodes.is_empty() && !selector.is_empty() {
        bail!(usage(format!(
            "no node matches {}",
            selection_text(selector)
        )));
    }
    Ok(nodes)
}

/// The one node `selector` selects, for a question about one node; exit 2 when it selects none
/// or several, saying how many and which.
pub fn one_node(topo: &Topology, selector: &NodeSelector) -> Result<NodeId> {
    if selector.is_empty() {
        bail!(usage(
            "which node? Name it with --node NAME, or select exactly one with --site, --pool or -l"
        ));
    }
    match select(topo, selector)?.as_slice() {
        [one] => Ok(*one),
        many => {
            const SHOWN: usize = 5;
            let names: Vec<&str> = many
                .iter()
                .take(SHOWN)
                .map(|n| &*topo.node(*n).name)
                .collect();
            let more = if many.len() > SHOWN { ", ..." } else { "" };
            bail!(usage(format!(
                "{} matches {} ({}{more}); one node is needed: narrow the selection (e.g. --node)",
                selection_text(selector),
                counted(many.len(), "node", "nodes"),
                names.join(", "),
            )))
        }
    }
}

/// A selection as the flags that make it (`--site A,B -l 'zone=z1'`), for messages.
pub fn selection_text(selector: &NodeSelector) -> String {
    let names = |flag: &str, values: &[String]| {
        (!values.is_empty()).then(|| format!("{flag} {}", values.join(",")))
    };
    let labels = selector.labels.iter().map(|l| format!("-l '{l}'"));
    names("--site", &selector.sites)
        .into_iter()
        .chain(names("--pool", &selector.pools))
        .chain(labels)
        .chain(names("--node", &selector.nodes))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Exit 1 when a diagnostic reaches `--fail-on` (the result was printed in full before).
pub fn fail_on(level: FailOn, diags: &[Diagnostic]) -> Result<()> {
    fail_on_severities(level, diags.iter().map(|d| d.severity))
}

/// [`fail_on`] for the severities of a command's findings.
pub fn fail_on_severities(level: FailOn, found: impl Iterator<Item = Severity>) -> Result<()> {
    let limit = match level {
        FailOn::Error => Severity::Error,
        FailOn::Warning => Severity::Warning,
        FailOn::None => return Ok(()),
    };
    let n = found.filter(|s| *s <= limit).count();
    if n > 0 {
        bail!(ExitError {
            code: 1,
            message: format!(
                "{} at or above --fail-on {}{}",
                counted(n, "diagnostic", "diagnostics"),
                limit.as_str(),
                if level == FailOn::Error {
                    " (the default: part of the input was not read as written; --fail-on none exits 0)"
                } else {
                    ""
                }
            ),
        });
    }
    Ok(())
}

/// The command the completion scripts complete.
const BIN: &str = "unbounded-mtu";

/// Writes a shell completion script for `shell` to standard output (`completion`).
pub fn completion(shell: crate::cli::Shell) -> Result<()> {
    let script = completion_script(shell)?;
    write_bytes(&script)
}

/// The completion script for `shell`.
///
/// clap_complete's bash script names its states after the binary with hyphens escaped one way in
/// the loop that walks the words and another in the arms that complete them, so for a name with
/// a hyphen no subcommand's options ever complete (clap-rs/clap#6421, unreleased as of
/// clap_complete 4.6.12). The bash script is therefore generated for the hyphen-free name
/// `unbounded_mtu`, in which both agree, and registered for the real command.
pub fn completion_script(shell: crate::cli::Shell) -> Result<Vec<u8>> {
    use clap::CommandFactory;
    use clap_complete::Shell as S;
    let mut cmd = crate::cli::Cli::command();
    let mut buf: Vec<u8> = Vec::new();
    match shell {
        crate::cli::Shell::Bash => {
            let internal = BIN.replace('-', "_");
            clap_complete::generate(S::Bash, &mut cmd, &internal, &mut buf);
            let text = String::from_utf8(buf)?;
            let registered: Vec<String> = text
                .lines()
                .map(|l| match l.trim_start().starts_with("complete -F ") {
                    true => match l.strip_suffix(&format!(" {internal}")) {
                        Some(head) => format!("{head} {BIN}"),
                        None => l.to_string(),
                    },
                    false => l.to_string(),
                })
                .collect();
            let mut out = registered.join("\n");
            out.push('\n');
            Ok(out.into_bytes())
        }
        crate::cli::Shell::Zsh => {
            clap_complete::generate(S::Zsh, &mut cmd, BIN, &mut buf);
            Ok(buf)
        }
        crate::cli::Shell::Fish => {
            clap_complete::generate(S::Fish, &mut cmd, BIN, &mut buf);
            Ok(buf)
        }
    }
}

/// `man`: the command's manual page (roff) or a subcommand's on standard output, or every page
/// written into a directory (the files listed on standard output).
pub fn man_page(args: &crate::cli::ManArgs) -> Result<()> {
    use clap::{CommandFactory, ValueEnum};
    let mut cmd = crate::cli::Cli::command().disable_help_subcommand(true);
    // Built, so that each subcommand knows its full name (`unbounded-mtu-resolve`).
    cmd.build();
    let pages: Vec<clap::Command> = std::iter::once(cmd.clone())
        .chain(cmd.get_subcommands().cloned())
        .collect();
    if let Some(dir) = &args.out_dir {
        let failed = |e: std::io::Error| usage(format!("--out-dir {}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(failed)?;
        let mut written = String::new();
        for page in pages {
            let path = man(page).generate_to(dir).map_err(failed)?;
            written.push_str(&format!("{}\n", path.display()));
        }
        return write_text(&written);
    }
    let name = args
        .page
        .and_then(|p| p.to_possible_value())
        .map(|v| format!("{BIN}-{}", v.get_name()))
        .unwrap_or_else(|| BIN.to_string());
    let page = pages
        .into_iter()
        .find(|p| p.get_display_name() == Some(name.as_str()) || p.get_name() == name)
        .ok_or_else(|| usage(format!("no manual page {name}")))?;
    let mut buf: Vec<u8> = Vec::new();
    man(page).render(&mut buf)?;
    write_bytes(&buf)
}

/// The manual page of `page` (a built command), its footer naming the program and version.
fn man(page: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(page).source(format!("{BIN} {}", crate::VERSION))
}

/// Writes text to standard output. A reader that went away (`| head`) is an
/// [`std::io::ErrorKind::BrokenPipe`] error, which the binary ends on quietly.
pub fn write_text(s: &str) -> Result<()> {
    write_bytes(s.as_bytes())
}

fn write_bytes(b: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(b)?;
    out.flush()?;
    Ok(())
}

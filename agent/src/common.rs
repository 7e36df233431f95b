//! What every offline command shares: loading, output and exit codes.

use crate::cli::{Common, FailOn, Output};
use anyhow::{Result, bail};
use topology_core::decode::Decoded;
use topology_core::diag::{Diagnostic, Severity};
use topology_core::model::Topology;

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

/// The output format (`-o`, a table by default, on a terminal and in a pipe alike).
pub fn output(c: &Common) -> Output {
    c.output
}

/// Loads and decodes the inputs: the cluster with `--kubeconfig` / `--in-cluster` (read-only
/// LISTs), else the `-f` files; exit 2 when nothing could be read or decoded.
pub fn load(c: &Common) -> Result<Decoded> {
    if c.kubeconfig.is_some() || c.in_cluster || c.context.is_some() {
        let src = crate::k8s::client::Source {
            kubeconfig: c.kubeconfig.clone(),
            in_cluster: c.in_cluster,
            context: c.context.clone(),
        };
        // Nothing could be read: the error's message is complete on one line (kubectl's words
        // for a server's answer, the URL of an unreachable server, the contexts that exist).
        let decoded = crate::k8s::live::load(&src).map_err(|e| usage(e.to_string()))?;
        if decoded.objects.is_empty() && decoded.diagnostics.is_empty() {
            bail!(usage(
                "the cluster holds no objects of a kind this tool reads"
            ));
        }
        return Ok(decoded);
    }
    if c.files.is_empty() {
        bail!(usage(
            "nothing to read: give -f PATH, --kubeconfig or --in-cluster"
        ));
    }
    load_files(&c.files)
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

/// Builds the topology from decoded input; exit 2 when the input names nodes but none of them
/// resolved (an empty result would read as a healthy empty cluster).
pub fn topology(decoded: &Decoded) -> Result<Topology> {
    let topo = Topology::build(decoded.objects.iter(), decoded.diagnostics.iter().cloned());
    some_resolved(&topo)?;
    Ok(topo)
}

/// Exit 2 when the input names nodes but none of them resolved, saying why.
pub fn some_resolved(topo: &Topology) -> Result<()> {
    match topo.none_resolved() {
        Some(why) => Err(usage(why.to_string())),
        None => Ok(()),
    }
}

/// Exit 1 when a diagnostic reaches `--fail-on` (the result was printed in full before).
pub fn fail_on(level: FailOn, diags: &[Diagnostic]) -> Result<()> {
    let limit = match level {
        FailOn::Error => Severity::Error,
        FailOn::Warning => Severity::Warning,
        FailOn::None => return Ok(()),
    };
    let n = diags.iter().filter(|d| d.severity <= limit).count();
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

/// Writes a serializable value as JSON or YAML to standard output.
pub fn write_data<T: serde::Serialize>(value: &T, out: Output) -> Result<()> {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut lock = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match out {
        Output::Yaml => {
            let s = serde_saphyr::to_string(value)
                .map_err(|e| anyhow::anyhow!("cannot write YAML: {e}"))?;
            lock.write_all(s.as_bytes())?;
        }
        _ => {
            serde_json::to_writer_pretty(&mut lock, value)?;
            lock.write_all(b"\n")?;
        }
    }
    lock.flush()?;
    Ok(())
}

/// The diagnostics block every command's table output ends with (`no diagnostics` when there
/// are none).
pub fn diagnostics_table(diags: &[Diagnostic]) -> String {
    if diags.is_empty() {
        return "no diagnostics\n".to_string();
    }
    let rows: Vec<Vec<String>> = diags
        .iter()
        .map(|d| {
            vec![
                d.severity.to_string(),
                d.code.to_string(),
                d.object.clone(),
                d.field.clone(),
                d.source.as_ref().map(|x| x.to_string()).unwrap_or_default(),
                d.message.clone(),
            ]
        })
        .collect();
    table(
        &["SEVERITY", "CODE", "OBJECT", "FIELD", "SOURCE", "MESSAGE"],
        &rows,
    )
}

/// Renders rows as aligned columns.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let mut s = String::new();
    let line = |cells: &mut dyn Iterator<Item = &str>, s: &mut String| {
        let mut parts = Vec::new();
        for (i, c) in cells.enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            parts.push(format!("{c:<w$}"));
        }
        s.push_str(parts.join("  ").trim_end());
        s.push('\n');
    };
    line(&mut headers.iter().copied(), &mut s);
    for r in rows {
        line(&mut r.iter().map(String::as_str), &mut s);
    }
    s
}

/// Writes a shell completion script for `shell` to standard output (`completion`).
pub fn completion(shell: crate::cli::Shell) -> Result<()> {
    use clap::CommandFactory;
    use clap_complete::Shell as S;
    let mut cmd = crate::cli::Cli::command();
    let shell = match shell {
        crate::cli::Shell::Bash => S::Bash,
        crate::cli::Shell::Zsh => S::Zsh,
        crate::cli::Shell::Fish => S::Fish,
    };
    let mut buf: Vec<u8> = Vec::new();
    clap_complete::generate(shell, &mut cmd, "unbounded-mtu", &mut buf);
    write_bytes(&buf)
}

/// Writes the manual page (roff) to standard output (`man`).
pub fn man_page() -> Result<()> {
    use clap::CommandFactory;
    let mut buf: Vec<u8> = Vec::new();
    clap_mangen::Man::new(crate::cli::Cli::command()).render(&mut buf)?;
    write_bytes(&buf)
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

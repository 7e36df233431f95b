//! `unbounded-mtu what-if`: the question read from the flags, answered by the library, printed
//! as a digest (a table, `table.rs`) or a `WhatIf` document.

mod table;

use crate::common::{self, usage};
use crate::output::{Format, diagnostics_table, write_data};
use crate::settings;
use anyhow::Result;
use mtu_solver::Resolver;
use mtu_solver::whatif::{self, Change, Digest, KindDigest, Mutation};
use serde::Serialize;
use table::Shown;
use topology_core::diag::Diagnostic;

/// The totals of `summary`, as the spec names them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    nodes_affected: usize,
    values_changed: usize,
}

/// The `WhatIf` document: `changes` left out with `--summary`.
#[derive(Serialize)]
struct Doc<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    changes: Option<&'a [Change]>,
    summary: Summary,
    digest: &'a [KindDigest],
    diagnostics: Vec<mtu_solver::report::DiagOut>,
}

/// Runs `what-if`.
pub fn run(args: &settings::WhatIf) -> Result<()> {
    let files: &[String] = match &args.offline.input {
        settings::Input::Files(files) => files,
        settings::Input::Cluster(_) => &[],
    };
    mtu_solver::load::stdin_once(&[files, &args.after]).map_err(|e| usage(e.to_string()))?;
    let (result, diags) = answer(args)?;
    // One pass over the changes; the digest holds its groups, not the changes.
    let digest = Digest::of(&result.changes);
    match args.format {
        Format::Table(style) => {
            let shown = if args.summary {
                Shown::Totals
            } else {
                Shown::digest_or_details(args.details)
            };
            let mut s = table::render(&digest, &result.changes, shown, style);
            s.push_str(&diagnostics_table(&diags, style));
            common::write_text(&s)?;
        }
        Format::Data(f) => {
            let doc = Doc {
                api_version: mtu_solver::report::API_VERSION,
                kind: "WhatIf",
                changes: (!args.summary).then_some(result.changes.as_slice()),
                summary: Summary {
                    nodes_affected: digest.nodes_affected,
                    values_changed: digest.values_changed,
                },
                digest: &digest.kinds,
                diagnostics: diags
                    .iter()
                    .map(mtu_solver::report::DiagOut::from)
                    .collect(),
            };
            write_data(&doc, f)?;
        }
    }
    common::fail_on(args.fail_on, &diags)
}

/// Loads the input and answers the question (the mutations `asked`, or `--after`): the
/// changes, and the diagnostics of the inputs read.
fn answer(args: &settings::WhatIf) -> Result<(whatif::WhatIf, Vec<Diagnostic>)> {
    let (asked, selector) = (&args.asked, &args.selector);
    let decoded = common::load(&args.offline.input)?;
    let level = args.explanations;
    let settings = &args.offline.solver;
    let resolver = Resolver::new(decoded, settings.clone()).with_explanations(level);
    let topo = resolver.topology();
    common::some_resolved(topo)?;
    // Selectors choose whose changes are printed (names sorted), not what is computed.
    let shown: Option<Vec<&str>> = match selector.is_empty() {
        true => None,
        false => Some(
            common::select(topo, selector)?
                .into_iter()
                .map(|n| &*topo.node(n).name)
                .collect(),
        ),
    };
    // The question is checked by the library; the refusal names the flag that asked.
    let muts: Vec<Mutation> = asked.iter().map(|(_, m)| m.clone()).collect();
    if let Some((i, e)) = resolver.refused(&muts) {
        let flag = asked.get(i).map(|(f, _)| f.as_str()).unwrap_or("what-if");
        return Err(usage(format!("{flag}: {e}")));
    }
    let mut diags = resolver.input_diagnostics();
    let mut result = if !args.after.is_empty() {
        if !muts.is_empty() {
            return Err(usage(
                "--after compares two inputs; it does not combine with mutation flags",
            ));
        }
        let after = Resolver::new(common::load_files(&args.after)?, settings.clone());
        // The diagnostics of both inputs, each once.
        diags.extend(after.input_diagnostics());
        topology_core::diag::sort_diagnostics(&mut diags);
        diags.dedup();
        resolver.compare(&after)
    } else {
        if muts.is_empty() {
            return Err(usage(
                "what-if needs at least one mutation (--set, --clear, --disable, ...) or --after PATH",
            ));
        }
        resolver.what_if(&muts).map_err(|e| usage(e.to_string()))?
    };
    if let Some(names) = &shown {
        result
            .changes
            .retain(|c| names.binary_search(&&*c.node).is_ok());
    }
    Ok((result, diags))
}

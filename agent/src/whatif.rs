//! `unbounded-mtu what-if`.

use crate::cli::{ExplainLevel, WhatIfArgs};
use crate::common::{self, usage};
use crate::output::{Format, bound, diagnostics_table, table, write_data};
use anyhow::Result;
use mtu_solver::whatif::{self, Change, Input, Mutation};
use serde::Serialize;

/// A mutation and the flag that asked for it (`--set SitePeering/ab=1300`), for messages.
pub type Asked = (String, Mutation);

/// Parses the mutation flags, in the order of the command line: clap collects each flag
/// separately, and `matches` (the `what-if` subcommand's) says where each value stood. Without
/// them the flags apply in the order of the table in `cli.md`. Each flag's value is read by the
/// library's textual form of a mutation, whose verb is the flag's name (`--set X` is `set X`).
pub fn mutations(args: &WhatIfArgs, matches: Option<&clap::ArgMatches>) -> Result<Vec<Asked>> {
    let agent_mtu: Vec<String> = args.agent_mtu.iter().map(u32::to_string).collect();
    let flags: [(&str, &[String]); 10] = [
        ("--set", &args.set),
        ("--clear", &args.clear),
        ("--disable", &args.disable),
        ("--enable", &args.enable),
        ("--add-member", &args.add_member),
        ("--remove-member", &args.remove_member),
        ("--demote", &args.demote),
        ("--promote", &args.promote),
        ("--underlay", &args.underlay),
        ("--agent-mtu", &agent_mtu),
    ];
    let mut order: Vec<(usize, Asked)> = Vec::new();
    for (flag, values) in flags {
        let verb = flag.trim_start_matches('-');
        let id = verb.replace('-', "_");
        for (nth, value) in values.iter().enumerate() {
            let asked = format!("{flag} {value}");
            let m: Mutation = format!("{verb} {value}")
                .parse()
                .map_err(|e| usage(format!("{asked}: {e}")))?;
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

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    nodes_affected: usize,
    values_changed: usize,
}

#[derive(Serialize)]
struct Doc<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    changes: &'a [Change],
    summary: Summary,
    diagnostics: Vec<mtu_solver::report::DiagOut>,
}

/// Runs `what-if`.
pub fn run(args: &WhatIfArgs, matches: Option<&clap::ArgMatches>) -> Result<()> {
    let asked = mutations(args, matches)?;
    let selector = common::selector(&args.select)?;
    mtu_solver::load::stdin_once(&[&args.common.files, &args.after])
        .map_err(|e| usage(e.to_string()))?;
    let decoded = common::load(&args.common)?;
    let base = Input {
        objects: decoded.objects,
        diagnostics: decoded.diagnostics,
        settings: crate::settings::offline(&args.common),
    };
    let base_topo = base.topology();
    common::some_resolved(&base_topo)?;
    // Selectors choose whose changes are printed (names sorted), not what is computed.
    let shown: Option<Vec<&str>> = match selector.is_empty() {
        true => None,
        false => Some(
            common::select(&base_topo, &selector)?
                .into_iter()
                .map(|n| &*base_topo.node(n).name)
                .collect(),
        ),
    };
    // The question is checked by the library; the refusal names the flag that asked.
    let muts: Vec<Mutation> = asked.iter().map(|(_, m)| m.clone()).collect();
    if let Some((i, e)) = whatif::first_refused(&base, &base_topo, &muts) {
        let flag = asked.get(i).map(|(f, _)| f.as_str()).unwrap_or("what-if");
        return Err(usage(format!("{flag}: {e}")));
    }
    let mut diags = base_topo.diagnostics.clone();
    let full = args.explain == ExplainLevel::Full;
    let mut result = if !args.after.is_empty() {
        if !muts.is_empty() {
            return Err(usage(
                "--after compares two inputs; it does not combine with mutation flags",
            ));
        }
        let d2 = common::load_files(&args.after)?;
        let after = Input {
            objects: d2.objects,
            diagnostics: d2.diagnostics,
            settings: base.settings.clone(),
        };
        // The diagnostics of both inputs, each once.
        diags.extend(after.topology().diagnostics);
        topology_core::diag::sort_diagnostics(&mut diags);
        diags.dedup();
        whatif::compare(&base, &after, full)
    } else {
        if muts.is_empty() {
            return Err(usage(
                "what-if needs at least one mutation (--set, --clear, --disable, ...) or --after PATH",
            ));
        }
        whatif::what_if(&base, &muts, full).map_err(|e| usage(e.to_string()))?
    };
    if let Some(names) = &shown {
        result
            .changes
            .retain(|c| names.binary_search(&&*c.node).is_ok());
    }
    let doc = Doc {
        api_version: mtu_solver::report::API_VERSION,
        kind: "WhatIf",
        diagnostics: diags
            .iter()
            .map(mtu_solver::report::DiagOut::from)
            .collect(),
        summary: Summary {
            nodes_affected: result.nodes_affected(),
            values_changed: result.changes.len(),
        },
        changes: &result.changes,
    };
    match crate::settings::format(&args.out) {
        Format::Table(style) => {
            let mut s = String::new();
            let mut current: Option<&str> = None;
            let mut rows: Vec<Vec<String>> = Vec::new();
            let flush = |node: Option<&str>, rows: &mut Vec<Vec<String>>, s: &mut String| {
                if let Some(n) = node {
                    s.push_str(&format!("NODE {n}\n"));
                    let headers = ["ITEM", "BEFORE", "AFTER", "BOUND BY"];
                    for l in table(&headers, rows, style).lines() {
                        s.push_str(&format!("  {l}\n"));
                    }
                }
                rows.clear();
            };
            for c in doc.changes {
                if current != Some(&*c.node) {
                    flush(current, &mut rows, &mut s);
                    current = Some(&*c.node);
                }
                let show = |v: Option<u32>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
                rows.push(vec![
                    c.item.to_string(),
                    show(c.before),
                    show(c.after),
                    c.explanation
                        .as_ref()
                        .map(|e| bound(&e.bound.term, &e.bound.source, style))
                        .unwrap_or_default(),
                ]);
            }
            flush(current, &mut rows, &mut s);
            s.push_str(&format!(
                "{} changed on {}\n\n",
                common::counted(doc.summary.values_changed, "value", "values"),
                common::counted(doc.summary.nodes_affected, "node", "nodes")
            ));
            s.push_str(&diagnostics_table(&diags, style));
            common::write_text(&s)?;
        }
        Format::Data(f) => write_data(&doc, f)?,
    }
    common::fail_on(args.fail.fail_on, &diags)
}

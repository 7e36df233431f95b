//! `unbounded-mtu what-if`.

use crate::cli::{ExplainLevel, Output, WhatIfArgs};
use crate::common::{self, table, usage};
use anyhow::Result;
use mtu_solver::report::ExplOut;
use mtu_solver::snapshot::Item;
use mtu_solver::whatif::{self, Input, Mutation};
use serde::Serialize;
use std::sync::Arc;
use topology_core::vocab::Kind;

fn kind_name(spec: &str, flag: &str) -> Result<(Kind, String)> {
    let (k, n) = spec
        .split_once('/')
        .ok_or_else(|| usage(format!("{flag} {spec}: expected KIND/NAME")))?;
    let kind =
        Kind::parse_ci(k).ok_or_else(|| usage(format!("{flag} {spec}: unknown kind {k}")))?;
    if n.is_empty() {
        return Err(usage(format!("{flag} {spec}: the name is empty")));
    }
    Ok((kind, n.to_string()))
}

fn split_eq<'a>(spec: &'a str, flag: &str, form: &str) -> Result<(&'a str, &'a str)> {
    spec.split_once('=')
        .ok_or_else(|| usage(format!("{flag} {spec}: expected {form}")))
}

/// A mutation and the flag that asked for it (`--set SitePeering/ab=1300`), for messages.
pub type Asked = (String, Mutation);

/// Parses the mutation flags, in the order of the command line: clap collects each flag
/// separately, and `matches` (the `what-if` subcommand's) says where each value stood. Without
/// them the flags apply in the order of the table in `cli.md`.
pub fn mutations(args: &WhatIfArgs, matches: Option<&clap::ArgMatches>) -> Result<Vec<Asked>> {
    let mut order: Vec<((usize, String), Mutation)> = Vec::new();
    let pos = |flag: &str, value: &str, nth: usize| -> (usize, String) {
        let id = flag.trim_start_matches('-').replace('-', "_");
        let at = matches
            .and_then(|m| m.indices_of(&id))
            .and_then(|mut i| i.nth(nth))
            .unwrap_or(usize::MAX);
        (at, format!("{flag} {value}"))
    };
    for (i, s) in args.set.iter().enumerate() {
        let (obj, v) = split_eq(s, "--set", "KIND/NAME=MTU")?;
        let (kind, name) = kind_name(obj, "--set")?;
        let mtu: i64 = v
            .parse()
            .map_err(|_| usage(format!("--set {s}: {v:?} is not a number")))?;
        order.push((pos("--set", s, i), Mutation::SetCap { kind, name, mtu }));
    }
    for (i, s) in args.clear.iter().enumerate() {
        let (kind, name) = kind_name(s, "--clear")?;
        order.push((pos("--clear", s, i), Mutation::ClearCap { kind, name }));
    }
    for (flag, list, enabled) in [
        ("--disable", &args.disable, false),
        ("--enable", &args.enable, true),
    ] {
        for (i, s) in list.iter().enumerate() {
            let (kind, name) = kind_name(s, flag)?;
            if !matches!(
                kind,
                Kind::SitePeering | Kind::SiteGatewayPoolAssignment | Kind::GatewayPoolPeering
            ) {
                return Err(usage(format!(
                    "{flag} {s}: only SitePeering, SiteGatewayPoolAssignment and GatewayPoolPeering can be enabled or disabled"
                )));
            }
            order.push((
                pos(flag, s, i),
                Mutation::SetEnabled {
                    kind,
                    name,
                    enabled,
                },
            ));
        }
    }
    for (flag, list, add) in [
        ("--add-member", &args.add_member, true),
        ("--remove-member", &args.remove_member, false),
    ] {
        for (i, s) in list.iter().enumerate() {
            let (obj, member) = split_eq(s, flag, "KIND/NAME=Site/X or KIND/NAME=GatewayPool/X")?;
            let (kind, name) = kind_name(obj, flag)?;
            let (member_kind, member) = kind_name(member, flag)?;
            if !matches!(member_kind, Kind::Site | Kind::GatewayPool) {
                return Err(usage(format!(
                    "{flag} {s}: a member is a Site or a GatewayPool"
                )));
            }
            order.push((
                pos(flag, s, i),
                Mutation::Member {
                    kind,
                    name,
                    member_kind,
                    member,
                    add,
                },
            ));
        }
    }
    for (i, s) in args.demote.iter().enumerate() {
        order.push((pos("--demote", s, i), Mutation::Demote { node: s.clone() }));
    }
    for (i, s) in args.promote.iter().enumerate() {
        let (node, pool) = split_eq(s, "--promote", "NODE=POOL")?;
        order.push((
            pos("--promote", s, i),
            Mutation::Promote {
                node: node.into(),
                pool: pool.into(),
            },
        ));
    }
    for (i, s) in args.underlay.iter().enumerate() {
        let (node, v) = split_eq(s, "--underlay", "NODE=MTU")?;
        let mtu: u32 = v
            .parse()
            .map_err(|_| usage(format!("--underlay {s}: {v:?} is not a number")))?;
        if !(576..=65535).contains(&mtu) {
            return Err(usage(format!(
                "--underlay {s}: {mtu} is outside 576..65535"
            )));
        }
        order.push((
            pos("--underlay", s, i),
            Mutation::Underlay {
                node: node.into(),
                mtu,
            },
        ));
    }
    if let Some(v) = args.agent_mtu {
        let (at, _) = pos("--agent-mtu", "", 0);
        order.push(((at, format!("--agent-mtu {v}")), Mutation::AgentMtu(v)));
    }
    order.sort_by_key(|((i, _), _)| *i);
    Ok(order.into_iter().map(|((_, flag), m)| (flag, m)).collect())
}

#[derive(Serialize)]
struct ItemOut {
    #[serde(rename = "type")]
    ty: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    peer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    destination: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

#[derive(Serialize)]
struct ChangeOut {
    node: String,
    item: ItemOut,
    before: Option<u32>,
    after: Option<u32>,
    explanation: Option<Arc<ExplOut>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Summary {
    nodes_affected: usize,
    values_changed: usize,
}

#[derive(Serialize)]
struct Doc {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    changes: Vec<ChangeOut>,
    summary: Summary,
    diagnostics: Vec<mtu_solver::report::DiagOut>,
}

fn item_out(item: &Item) -> ItemOut {
    let mut o = ItemOut {
        ty: "",
        peer: None,
        destination: None,
        kind: None,
        name: None,
    };
    match item {
        Item::Link { peer } => {
            o.ty = "link";
            o.peer = Some(peer.to_string());
        }
        Item::Route { destination, kind } => {
            o.ty = "route";
            o.destination = Some(destination.0.to_string());
            o.kind = Some(kind.as_str());
        }
        Item::Device {
            unnamed,
            name,
            peer,
        } => {
            o.ty = "device";
            if !*unnamed {
                o.name = Some(name.to_string());
            }
            if !peer.is_empty() {
                o.peer = Some(peer.to_string());
            }
        }
        Item::Fabric => o.ty = "fabric",
        Item::Published { destination } => {
            o.ty = "published";
            o.destination = Some(destination.0.to_string());
        }
    }
    o
}

/// Runs `what-if`.
pub fn run(args: &WhatIfArgs, matches: Option<&clap::ArgMatches>) -> Result<()> {
    let asked = mutations(args, matches)?;
    mtu_solver::load::stdin_once(&[&args.common.files, &args.after])
        .map_err(|e| usage(e.to_string()))?;
    let decoded = common::load(&args.common)?;
    let base = Input {
        objects: decoded.objects,
        diagnostics: decoded.diagnostics,
        settings: crate::settings::offline(&args.common),
    };
    let base_topo = base.topology();
    // The question is checked by the library; the refusal names the flag that asked.
    let muts: Vec<Mutation> = asked.iter().map(|(_, m)| m.clone()).collect();
    if let Some((i, e)) = whatif::first_refused(&base, &base_topo, &muts) {
        let flag = asked.get(i).map(|(f, _)| f.as_str()).unwrap_or("what-if");
        return Err(usage(format!("{flag}: {e}")));
    }
    let mut diags = base_topo.diagnostics.clone();
    let full = args.explain == ExplainLevel::Full;
    let result = if !args.after.is_empty() {
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
        changes: result
            .changes
            .iter()
            .map(|c| ChangeOut {
                node: c.node.to_string(),
                item: item_out(&c.item),
                before: c.before,
                after: c.after,
                explanation: c.explanation.clone(),
            })
            .collect(),
    };
    match common::output(&args.common) {
        Output::Table => {
            let mut s = String::new();
            let mut current: Option<&str> = None;
            let mut rows: Vec<Vec<String>> = Vec::new();
            let flush = |node: Option<&str>, rows: &mut Vec<Vec<String>>, s: &mut String| {
                if let Some(n) = node {
                    s.push_str(&format!("NODE {n}\n"));
                    for l in table(&["ITEM", "BEFORE", "AFTER", "BOUND BY"], rows).lines() {
                        s.push_str(&format!("  {l}\n"));
                    }
                }
                rows.clear();
            };
            for c in &doc.changes {
                if current != Some(c.node.as_str()) {
                    flush(current, &mut rows, &mut s);
                    current = Some(c.node.as_str());
                }
                let what = match &c.item {
                    i if i.ty == "link" => format!("link {}", i.peer.as_deref().unwrap_or("")),
                    i if i.ty == "route" => format!(
                        "route {} ({})",
                        i.destination.as_deref().unwrap_or(""),
                        i.kind.unwrap_or("")
                    ),
                    i if i.ty == "device" => format!(
                        "device {}",
                        i.name
                            .clone()
                            .or_else(|| i.peer.clone().map(|p| format!("(wg for {p})")))
                            .unwrap_or_default()
                    ),
                    i if i.ty == "published" => {
                        format!("published {}", i.destination.as_deref().unwrap_or(""))
                    }
                    i => i.ty.to_string(),
                };
                let show = |v: Option<u32>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
                rows.push(vec![
                    what,
                    show(c.before),
                    show(c.after),
                    c.explanation
                        .as_ref()
                        .map(|e| e.bound.source.clone())
                        .unwrap_or_default(),
                ]);
            }
            flush(current, &mut rows, &mut s);
            s.push_str(&format!(
                "{} changed on {}\n\n",
                common::counted(doc.summary.values_changed, "value", "values"),
                common::counted(doc.summary.nodes_affected, "node", "nodes")
            ));
            s.push_str(&common::diagnostics_table(&diags));
            common::write_text(&s)?;
        }
        out => common::write_data(&doc, out)?,
    }
    common::fail_on(&args.common, &diags)
}

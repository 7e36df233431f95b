//! The node agent's reconcile loop in `--manifests` mode: manifests (re-read when they change,
//! polled every 2 s, debounced 200 ms, resynced every 60 s) -> topology -> the node's plan ->
//! the Linux dataplane (or `--dry-run`). Any failure marks the state dirty: the next pass redoes
//! every step even when the inputs did not change.

use crate::agent::status::Status;
use crate::dataplane::{self, FabricOptions};
use anyhow::{Context, Result, anyhow};
use mtu_solver::Solver;
use mtu_solver::report::{Renderer, node_out};
use mtu_solver::whatif::Input;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Everything the loop needs.
#[derive(Clone, Debug)]
pub struct Config {
    /// This node's name.
    pub node: String,
    /// Manifests (files or directories).
    pub manifests: Vec<String>,
    /// Apply inside this network namespace.
    pub netns: Option<PathBuf>,
    /// Print the plan and the operations; apply nothing.
    pub dry_run: bool,
    /// One reconcile, then exit.
    pub once: bool,
    /// Solver settings (agent `mtu`, encapsulations, tunnel family).
    pub solver: mtu_solver::Settings,
    /// Own underlay MTU; detected from the kernel when absent.
    pub underlay_mtu: Option<u32>,
    /// Dataplane settings.
    pub dataplane: dataplane_linux::Settings,
    /// Pod-side options.
    pub fabric: FabricOptions,
    /// Polling period for manifest changes.
    pub poll: Duration,
    /// Periodic resync.
    pub resync: Duration,
}

fn signature(paths: &[String]) -> Vec<(PathBuf, Option<SystemTime>, u64)> {
    let mut out = Vec::new();
    for p in paths {
        for e in walkdir::WalkDir::new(p)
            .sort_by_file_name()
            .into_iter()
            .flatten()
        {
            if let Ok(m) = e.metadata() {
                out.push((e.path().to_path_buf(), m.modified().ok(), m.len()));
            }
        }
    }
    out
}

/// The result of one pass.
pub struct Outcome {
    /// The node's plan with explanations (the `/status` `plan`).
    pub plan: serde_json::Value,
    /// The plan applied.
    pub plan_values: usize,
    /// Writes made.
    pub writes: usize,
    /// Dry-run operations.
    pub dry_ops: Vec<String>,
}

/// One reconcile pass.
pub fn reconcile_once(cfg: &Config, status: &Status) -> Result<Outcome> {
    let decoded = crate::input::load(&cfg.manifests).context("reading manifests")?;
    let mut input = Input {
        objects: decoded.objects,
        diagnostics: decoded.diagnostics,
        settings: cfg.solver.clone(),
    };
    let topo = input.topology();
    let node = topo.node_id(&cfg.node).ok_or_else(|| {
        anyhow!(
            "node {} is not in the manifests (or belongs to no Site)",
            cfg.node
        )
    })?;
    // Own underlay: given, else detected towards every link peer (the lowest counts).
    let own_underlay = match cfg.underlay_mtu {
        Some(u) => Some(u),
        None if cfg.dry_run => None,
        None => {
            let mut solver = Solver::new(&topo, input.settings.clone());
            let plan = solver.plan(node);
            let addr = dataplane::identity_addr(&topo, &plan)
                .ok_or_else(|| anyhow!("node {} has no address", cfg.node))?;
            let desired = dataplane::desired_state(&topo, &plan, addr, &cfg.fabric);
            let peers: Vec<std::net::IpAddr> =
                plan.links.iter().filter_map(|l| l.peer_addr).collect();
            dataplane::detect_underlay(&desired, &cfg.dataplane, cfg.netns.as_deref(), &peers)
                .context("detecting the underlay MTU")?
        }
    };
    if let Some(u) = own_underlay {
        input
            .settings
            .underlay_overrides
            .insert(cfg.node.clone(), u);
        // Peers without an annotation: the agent's own value bounds what it can see.
        input.settings.default_underlay = u;
    }
    let topo = input.topology();
    let mut solver = Solver::new(&topo, input.settings.clone());
    let plan = solver.plan(node);
    let addr = dataplane::identity_addr(&topo, &plan)
        .ok_or_else(|| anyhow!("node {} has no address", cfg.node))?;
    let desired = dataplane::desired_state(&topo, &plan, addr, &cfg.fabric);
    let mut r = Renderer::new(&solver, true);
    let out = node_out(&topo, &mut r, &plan);
    let plan_json = serde_json::to_value(&out).unwrap_or_default();
    let mut outcome = Outcome {
        plan: serde_json::Value::Null,
        plan_values: plan.value_count(),
        writes: 0,
        dry_ops: Vec::new(),
    };
    if cfg.dry_run {
        outcome.dry_ops = dataplane::dry_run(&desired, &cfg.dataplane, cfg.netns.as_deref())
            .unwrap_or_else(|e| {
                vec![format!(
                    "(cannot read the kernel: {e}; showing the plan only)"
                )]
            });
    } else {
        let report = dataplane::apply(&desired, &cfg.dataplane, cfg.netns.as_deref())
            .map_err(|e| anyhow!("dataplane: {e}"))?;
        outcome.writes = report.writes.len();
        for note in &report.notes {
            tracing::info!(node = %cfg.node, note = %note, "dataplane left alone");
        }
        for d in &desired.devices {
            status.applied_mtu("device", &d.name, d.mtu);
        }
        if let Some(f) = &desired.fabric {
            status.applied_mtu("fabric", &f.bridge, f.mtu);
        }
    }
    status.set_node(&cfg.node, own_underlay);
    status.set_adopted(&format!(
        "{}/{}",
        topo.site(plan.site).name,
        plan.pool
            .map(|p| topo.pool(p).name.to_string())
            .unwrap_or_else(|| "-".into())
    ));
    outcome.plan = plan_json;
    Ok(outcome)
}

/// Runs the loop until `--once` completes or the process is stopped.
pub fn run(cfg: &Config, status: &Status) -> Result<()> {
    let mut last_sig = None;
    let mut dirty = true;
    let mut last_pass = Instant::now();
    loop {
        let sig = signature(&cfg.manifests);
        let changed = last_sig.as_ref() != Some(&sig);
        if changed || dirty || last_pass.elapsed() >= cfg.resync {
            if changed && last_sig.is_some() {
                // Debounce: let a burst of writes settle.
                std::thread::sleep(Duration::from_millis(200));
            }
            last_sig = Some(signature(&cfg.manifests));
            last_pass = Instant::now();
            let start = Instant::now();
            match reconcile_once(cfg, status) {
                Ok(o) => {
                    dirty = false;
                    let detail = serde_json::json!({
                        "writes": o.writes,
                        "values": o.plan_values,
                        "dryRun": cfg.dry_run,
                    });
                    status.reconciled_with(start.elapsed(), o.plan, Some(detail));
                    tracing::info!(node = %cfg.node, writes = o.writes, values = o.plan_values, "reconciled");
                    if cfg.dry_run {
                        // A reader that went away ends the agent quietly (`main`), no panic.
                        let ops: String = o.dry_ops.iter().map(|op| format!("{op}\n")).collect();
                        crate::common::write_text(&ops)?;
                    }
                    if cfg.once {
                        return Ok(());
                    }
                }
                Err(e) => {
                    dirty = true;
                    let kind = if format!("{e:#}").starts_with("dataplane") {
                        "dataplane"
                    } else {
                        "input"
                    };
                    tracing::warn!(node = %cfg.node, error = %format!("{e:#}"), "reconcile failed; will retry");
                    status.failed(start.elapsed(), kind, format!("{e:#}"));
                    if cfg.once {
                        return Err(e);
                    }
                }
            }
        }
        std::thread::sleep(cfg.poll);
    }
}

/// Whether a path looks like a manifest source (for error messages).
pub fn exists(p: &str) -> bool {
    Path::new(p).exists()
}

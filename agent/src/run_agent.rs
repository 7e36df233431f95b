//! `unbounded-mtu agent`: settings, the HTTP server (started first), then the reconcile loop.

use crate::agent::AgentArgs;
use crate::agent::status::{self, Status};
use crate::cli::Family;
use crate::common::{protocol, usage};
use crate::dataplane::FabricOptions;
use crate::node_agent::{Config, run};
use anyhow::{Context, Result};
use std::sync::Arc;
use std::time::Duration;
use topology_core::net::LinkSettings;

/// Builds the loop's configuration from the flags.
pub fn config(a: &AgentArgs) -> Result<Config> {
    let mut pods = Vec::new();
    for p in &a.pods {
        let (ns, ifname) = p
            .rsplit_once(':')
            .ok_or_else(|| usage(format!("--pod {p}: expected NETNS_PATH:IFNAME")))?;
        pods.push((ns.into(), ifname.to_string()));
    }
    let dp = dataplane_linux::Settings {
        table: a.route_table,
        rule_priority: a.rule_priority,
        route_protocol: a.route_protocol,
        vxlan_vni: a.vxlan_vni,
        vxlan_port: a.vxlan_port,
        ..Default::default()
    };
    Ok(Config {
        node: a.node_name.clone(),
        manifests: a.manifests.iter().cloned().collect(),
        netns: a.netns.as_ref().map(std::path::PathBuf::from),
        dry_run: a.dry_run,
        once: a.once,
        solver: mtu_solver::Settings {
            cfg_mtu: a.mtu,
            link: LinkSettings {
                public_encap: protocol(a.public_encap),
                private_encap: protocol(a.private_encap),
                ipv6_outer: a.tunnel_ip_family == Family::Ipv6,
            },
            ..Default::default()
        },
        underlay_mtu: (!a.detect_underlay).then_some(a.underlay_mtu),
        dataplane: dp,
        fabric: FabricOptions {
            bridge: a.bridge.clone(),
            cni_config: a.cni_config.clone(),
            pods,
        },
        poll: Duration::from_secs(2),
        resync: Duration::from_secs(60),
    })
}

/// Runs the agent (logging is installed by `agent::main`).
pub fn main(a: &AgentArgs) -> Result<()> {
    if a.manifests.is_none() {
        return Err(usage("the manifests-mode loop needs --manifests PATH"));
    }
    let cfg = config(a)?;
    let status = Arc::new(Status::default());
    // The HTTP server starts first; SIGTERM ends the process with 0.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    // Health and metrics on the pod port, `/status` on its own (localhost) address; they stay
    // up for the life of the process.
    let _servers = rt
        .block_on(status::start(&a.listen, &a.status_address, status.clone()))
        .map_err(|e| match e {
            status::ServeError::Address { .. } => usage(e.to_string()),
            e => anyhow::Error::new(e),
        })?;
    rt.spawn(async {
        #[cfg(unix)]
        {
            if let Ok(mut term) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                tracing::info!("stopping on signal");
                std::process::exit(0);
            }
        }
    });
    run(&cfg, &status)
}

//! Verdicts: what a probe of a link says about the plan, and the `ProbeReport` document.

use super::target::Target;
use crate::report::{ApiVersion, DocumentKind};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::sync::Arc;

/// What the wire says about a link's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The path carries what the plan sends, and no more than it assumed.
    Ok,
    /// The plan sends more than the path carries: large packets vanish.
    BlackHole,
    /// The path carries more than the plan assumed (the plan is safe, not tight).
    Headroom,
    /// The peer answered no probe, not even the smallest.
    Unreachable,
}

impl Verdict {
    /// The name in reports and on the command line (`black-hole`).
    /// Costs a match.
    ///
    /// ```
    /// use mtu_solver::probe::Verdict;
    /// assert_eq!(Verdict::BlackHole.as_str(), "black-hole");
    /// assert_eq!("black-hole".parse::<Verdict>(), Ok(Verdict::BlackHole)); // reads back
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::BlackHole => "black-hole",
            Verdict::Headroom => "headroom",
            Verdict::Unreachable => "unreachable",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Verdict {
    type Err = String;
    fn from_str(s: &str) -> Result<Verdict, String> {
        [
            Verdict::Ok,
            Verdict::BlackHole,
            Verdict::Headroom,
            Verdict::Unreachable,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
        .ok_or_else(|| {
            format!("unknown verdict {s:?} (expected ok, black-hole, headroom or unreachable)")
        })
    }
}

/// One link's probe, judged against its plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkProbe {
    /// The peer.
    pub peer: Arc<str>,
    /// The underlay address probed.
    pub address: Option<IpAddr>,
    /// The underlay the plan assumed: `min(U(node), U(peer))`.
    pub planned_underlay: u32,
    /// The largest packet the underlay path answered (`None`: nothing answered).
    pub probed_underlay: Option<u32>,
    /// The link's planned MTU.
    #[serde(rename = "linkMTU")]
    pub link_mtu: u32,
    /// The largest packet that crossed the tunnel to the peer's pod gateway (`None` where no
    /// tunnel is up or it answered nothing).
    #[serde(rename = "probedLinkMTU")]
    pub probed_link_mtu: Option<u32>,
    /// The verdict.
    pub verdict: Verdict,
    /// For a black hole: the term of the link's explanation the wire contradicts.
    pub contradicts: Option<String>,
    /// Probes sent for this link.
    pub probes: u32,
}

/// What was measured on one link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Measured {
    /// Largest size the underlay address answered.
    pub underlay: Option<u32>,
    /// Largest size that crossed the tunnel.
    pub link: Option<u32>,
    /// Probes sent.
    pub probes: u32,
}

/// Judges one link: `black-hole` when the plan sends more than the path carries (the link MTU
/// plus its encapsulation above the probed underlay, or the link MTU above what crossed the
/// tunnel), `unreachable` when the underlay address answered nothing, `headroom` when the
/// path carries more than the plan assumed, `ok` otherwise.
/// Costs a few comparisons and a copy of the target's names.
///
/// ```
/// # let resolver = mtu_solver::doc_cluster::resolver();
/// use mtu_solver::probe::{Measured, Verdict, judge};
/// let wb = &resolver.probe_targets("wa")?[0]; // link 1400 + GENEVE 58, underlay 1500
/// let fits = judge(wb, Measured { underlay: Some(1500), link: Some(1400), probes: 2 });
/// assert_eq!((fits.verdict, fits.contradicts), (Verdict::Ok, None));
/// let short = judge(wb, Measured { underlay: Some(1440), link: None, probes: 9 });
/// assert_eq!(short.verdict, Verdict::BlackHole); // 1440 < 1400 + 58
/// assert_eq!(short.contradicts.as_deref(), Some(wb.underlay_term.as_str()));
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn judge(target: &Target, measured: Measured) -> LinkProbe {
    let (verdict, contradicts) = match measured.underlay {
        None => (Verdict::Unreachable, None),
        Some(u) if u < target.planned_outer() => {
            (Verdict::BlackHole, Some(target.underlay_term.clone()))
        }
        Some(_) if measured.link.is_some_and(|l| l < target.link_mtu) => {
            (Verdict::BlackHole, Some(target.link_term.clone()))
        }
        Some(u) if u > target.planned_underlay => (Verdict::Headroom, None),
        Some(_) => (Verdict::Ok, None),
    };
    LinkProbe {
        peer: target.peer.clone(),
        address: target.address,
        planned_underlay: target.planned_underlay,
        probed_underlay: measured.underlay,
        link_mtu: target.link_mtu,
        probed_link_mtu: measured.link,
        verdict,
        contradicts,
        probes: measured.probes,
    }
}

/// The `ProbeReport` document of one node (`probe -o json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeReport {
    /// `unbounded-mtu/v1alpha1`.
    pub api_version: ApiVersion,
    /// [`DocumentKind::ProbeReport`].
    pub kind: DocumentKind,
    /// The probing node.
    pub node: Arc<str>,
    /// Its links, sorted by peer name.
    pub links: Vec<LinkProbe>,
    /// Findings about the input the plan was resolved from.
    pub diagnostics: Vec<crate::report::DiagOut>,
}

impl ProbeReport {
    /// A report of `node`'s links (sorted here by peer name) and the input's diagnostics (in
    /// output order).
    /// Costs a sort of the links and a rendering of each diagnostic.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::probe::{LinkProbe, Measured, ProbeReport, judge};
    /// let measured = Measured { underlay: Some(1500), link: Some(1400), probes: 2 };
    /// let wb = judge(&resolver.probe_targets("wa")?[0], measured);
    /// let aa = LinkProbe { peer: "aa".into(), ..wb.clone() };
    /// let report = ProbeReport::new("wa".into(), vec![wb, aa], resolver.diagnostics());
    /// let peers: Vec<&str> = report.links.iter().map(|l| &*l.peer).collect();
    /// assert_eq!(peers, ["aa", "wb"]); // sorted by peer
    /// assert!(report.diagnostics.is_empty());
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn new(
        node: Arc<str>,
        mut links: Vec<LinkProbe>,
        diagnostics: &[topology_core::diag::Diagnostic],
    ) -> ProbeReport {
        links.sort_by(|a, b| a.peer.cmp(&b.peer));
        ProbeReport {
            api_version: ApiVersion::V1alpha1,
            kind: DocumentKind::ProbeReport,
            node,
            links,
            diagnostics: diagnostics
                .iter()
                .map(crate::report::DiagOut::from)
                .collect(),
        }
    }

    /// Links with verdict `v`.
    /// Costs a walk of the links.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::probe::{Measured, ProbeReport, Verdict, judge};
    /// let silent = Measured { underlay: None, link: None, probes: 3 };
    /// let links = resolver.probe_targets("wa")?.iter().map(|t| judge(t, silent)).collect();
    /// let report = ProbeReport::new("wa".into(), links, &[]);
    /// assert_eq!((report.count(Verdict::Unreachable), report.count(Verdict::Ok)), (1, 0));
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn count(&self, v: Verdict) -> usize {
        self.links.iter().filter(|l| l.verdict == v).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topology_core::vocab::Protocol;

    fn wireguard_link() -> Target {
        Target {
            peer: "b".into(),
            address: Some("198.51.100.1".parse().unwrap()),
            tunnel_address: Some("10.8.1.1".parse().unwrap()),
            device: Some("wg51820".into()),
            protocol: Protocol::WireGuard,
            overhead: 80,
            planned_underlay: 1500,
            node_underlay: 1500,
            peer_underlay: 1500,
            link_mtu: 1420,
            underlay_term: "underlay of a 1500 (default)".into(),
            link_term: "underlay of a 1500 (default) − WireGuard overhead 80".into(),
        }
    }

    fn measured(underlay: Option<u32>, link: Option<u32>) -> Measured {
        Measured {
            underlay,
            link,
            probes: 3,
        }
    }

    #[test]
    fn a_smaller_path_than_the_plan_sends_is_a_black_hole_naming_the_underlay() {
        let p = judge(&wireguard_link(), measured(Some(1400), None));
        assert_eq!(p.verdict, Verdict::BlackHole);
        assert_eq!(
            p.contradicts.as_deref(),
            Some("underlay of a 1500 (default)")
        );
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"peer": "b", "address": "198.51.100.1", "plannedUnderlay": 1500,
                "probedUnderlay": 1400, "linkMTU": 1420, "probedLinkMTU": null,
                "verdict": "black-hole", "contradicts": "underlay of a 1500 (default)",
                "probes": 3})
        );
    }

    #[test]
    fn a_smaller_path_below_a_capped_link_is_not_a_black_hole() {
        // A tunnelMTU of 1280 sends 1360-byte packets: a 1400 path carries them.
        let mut t = wireguard_link();
        t.link_mtu = 1280;
        assert_eq!(judge(&t, measured(Some(1400), None)).verdict, Verdict::Ok);
        assert_eq!(
            judge(&t, measured(Some(1359), None)).verdict,
            Verdict::BlackHole
        );
        assert_eq!(judge(&t, measured(Some(1360), None)).verdict, Verdict::Ok);
    }

    #[test]
    fn a_tunnel_carrying_less_than_the_link_is_a_black_hole_naming_the_link_term() {
        let p = judge(&wireguard_link(), measured(Some(1500), Some(1380)));
        assert_eq!(p.verdict, Verdict::BlackHole);
        assert_eq!(
            p.contradicts.as_deref(),
            Some("underlay of a 1500 (default) − WireGuard overhead 80")
        );
        let p = judge(&wireguard_link(), measured(Some(1500), Some(1420)));
        assert_eq!(p.verdict, Verdict::Ok);
    }

    #[test]
    fn headroom_and_unreachable() {
        let mut t = wireguard_link();
        t.planned_underlay = 1400;
        t.link_mtu = 1320;
        assert_eq!(
            judge(&t, measured(Some(1500), None)).verdict,
            Verdict::Headroom
        );
        assert_eq!(judge(&t, measured(Some(1400), None)).verdict, Verdict::Ok);
        let p = judge(&t, measured(None, None));
        assert_eq!((p.verdict, p.contradicts), (Verdict::Unreachable, None));
    }

    #[test]
    fn reports_sort_links_and_count_verdicts() {
        let mut a = judge(&wireguard_link(), measured(Some(1400), None));
        a.peer = "z".into();
        let b = judge(&wireguard_link(), measured(None, None));
        let r = ProbeReport::new("a".into(), vec![a, b], &[]);
        assert_eq!(&*r.links[0].peer, "b");
        assert_eq!(r.count(Verdict::BlackHole), 1);
        assert_eq!(r.count(Verdict::Unreachable), 1);
        assert_eq!("black-hole".parse::<Verdict>(), Ok(Verdict::BlackHole));
        assert!("blackhole".parse::<Verdict>().is_err());
    }
}

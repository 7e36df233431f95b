//! A gateway's published values (its GatewayPoolNode's `forwarding-mtus` annotation, an input)
//! against what this input would have it publish (its plan, `mtu.md` §6). Workers' routes take
//! the published values as they are; one that differs binds routes with a value nothing else in
//! the input explains, so it is reported (`W-PUBLISHED-STALE`) on the gateway's plan, where
//! `resolve` and `explain` both read it.

use crate::plan::Published;
use ipnet::IpNet;
use topology_core::diag::{Code, Diagnostic};
use topology_core::ids::NodeId;
use topology_core::model::Topology;
use topology_core::mtu::Mtu;
use topology_core::net::prefix_order;
use topology_core::vocab::FORWARDING_ANNOTATION;

/// How many differing prefixes a finding names (it counts them all).
const NAMED: usize = 3;

/// One entry of a gateway's annotation that this input would not publish as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleEntry {
    /// The (uncut) prefix.
    pub prefix: IpNet,
    /// What the gateway published for it.
    pub published: Mtu,
    /// What this input would publish for it (None: nothing, the gateway advertises no such
    /// prefix by this input).
    pub would: Option<Mtu>,
}

/// What `would` (a gateway's planned published values, in output order) holds for `prefix`.
pub(crate) fn would_publish<'a>(would: &'a [Published], prefix: &IpNet) -> Option<&'a Published> {
    would
        .binary_search_by(|p| prefix_order(&p.destination, prefix))
        .ok()
        .and_then(|i| would.get(i))
}

/// The entries of gateway `g`'s annotation that differ from `would`, its planned published
/// values, in the annotation's (prefix) order. Prefixes the gateway has not published yet are
/// not entries: nothing reads an absent value.
pub(crate) fn stale_entries(topo: &Topology, g: NodeId, would: &[Published]) -> Vec<StaleEntry> {
    topo.node(g)
        .published
        .iter()
        .filter_map(|(prefix, published)| {
            let w = would_publish(would, prefix).map(|p| p.mtu.mtu);
            (w != Some(*published)).then_some(StaleEntry {
                prefix: *prefix,
                published: *published,
                would: w,
            })
        })
        .collect()
}

/// The `W-PUBLISHED-STALE` finding of gateway `g` whose annotation differs from `would`, naming
/// the first differing prefixes (None when every entry agrees, or it published nothing).
pub(super) fn stale_finding(topo: &Topology, g: NodeId, would: &[Published]) -> Option<Diagnostic> {
    let node = topo.node(g);
    let by = node.published_by.as_ref()?;
    let stale = stale_entries(topo, g, would);
    if stale.is_empty() {
        return None;
    }
    let named: Vec<String> = stale
        .iter()
        .take(NAMED)
        .map(|e| match e.would {
            Some(w) => format!("{} published {}, would publish {w}", e.prefix, e.published),
            None => format!(
                "{} published {}, would publish nothing",
                e.prefix, e.published
            ),
        })
        .collect();
    let more = stale.len().saturating_sub(NAMED);
    Some(Diagnostic::new(
        Code::PublishedStale,
        format!("GatewayPoolNode/{by}"),
        format!("metadata.annotations.{FORWARDING_ANNOTATION}"),
        format!(
            "gateway {} published {} value(s) that this input would publish otherwise: {}{}; the gateway has not caught up, or the input is not what the cluster runs",
            node.name,
            stale.len(),
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        ),
        node.published_loc.clone(),
    ))
}

#[cfg(test)]
mod tests {
    use crate::{Settings, Solver};
    use test_utils::reference::topology_of;
    use topology_core::diag::Code;

    /// Example 06 with `gb`'s annotation set to `annotation`: the findings of `gb`'s plan.
    fn findings(annotation: &str) -> Vec<(Code, String, String)> {
        let text = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/06-routed-local-published/cluster.yaml"
        ));
        let published = r#""{\"10.103.0.0/16\": 1350}""#;
        assert!(text.contains(published));
        let topo = topology_of(&text.replace(published, annotation));
        let gb = topo.find_node("gb").unwrap_or_else(|e| panic!("{e}"));
        let plan = Solver::new(&topo, Settings::default()).plan(gb);
        plan.diagnostics
            .into_iter()
            .map(|d| (d.code, d.object, d.message))
            .collect()
    }

    #[test]
    fn a_differing_annotation_is_stale() {
        let got = findings(r#""{\"10.103.0.0/16\": 1350, \"10.9.0.0/16\": 1300}""#);
        assert_eq!(got.len(), 1, "{got:?}");
        let (code, object, message) = &got[0];
        assert_eq!(*code, Code::PublishedStale);
        assert_eq!(object, "GatewayPoolNode/gb");
        assert!(
            message.starts_with(
                "gateway gb published 2 value(s) that this input would publish otherwise: \
                 10.9.0.0/16 published 1300, would publish nothing; \
                 10.103.0.0/16 published 1350, would publish 1400;"
            ),
            "{message}"
        );
    }

    #[test]
    fn an_agreeing_annotation_is_not() {
        assert_eq!(findings(r#""{\"10.103.0.0/16\": 1400}""#), []);
    }
}

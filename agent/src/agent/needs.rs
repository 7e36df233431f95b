//! What the API source must watch, asked on every turn and answered again only when what the
//! answer reads changed ([`Version`]s of the caches, the plan's Sites and peers): whether the
//! heavy gateway kinds are needed, and which Nodes' metadata the plan needs. A turn for a change
//! elsewhere then costs a comparison, not a pass over the assignments and the SiteNodeSlices.

use super::adopt::Adopted;
use super::caches::{NodeSelection, needs_heavy, slice_members};
use super::reconcile::Linked;
use crate::k8s::store::{Store, Version};

/// The last answers and what they read.
#[derive(Debug, Default)]
pub struct Needs {
    heavy: Option<(Version, bool)>,
    nodes: Option<NodesAnswer>,
}

/// The last Node metadata selection and what it read.
#[derive(Debug)]
struct NodesAnswer {
    linked: Linked,
    slices: Option<Version>,
    metadata: Option<Version>,
    selection: NodeSelection,
}

impl Needs {
    /// Whether the heavy kinds are needed ([`needs_heavy`] of the assignments' cache).
    pub fn heavy(&mut self, adopted: &Adopted, assignments: &Store) -> bool {
        let version = assignments.version();
        if let Some((v, answer)) = self.heavy
            && v == version
        {
            return answer;
        }
        let answer = needs_heavy(adopted, &assignments.held());
        self.heavy = Some((version, answer));
        answer
    }

    /// The Node metadata selection a plan linking `linked` needs: its peers and the members of
    /// its Sites' SiteNodeSlices, `own` (the agent's own Node) left out, as
    /// [`NodeSelection::for_peers`] chooses it from the metadata watched now.
    pub fn nodes(
        &mut self,
        linked: &Linked,
        own: &str,
        slices: Option<&Store>,
        metadata: Option<&Store>,
    ) -> NodeSelection {
        let (sv, mv) = (slices.map(Store::version), metadata.map(Store::version));
        if let Some(a) = &self.nodes
            && a.slices == sv
            && a.metadata == mv
            && a.linked == *linked
        {
            return a.selection.clone();
        }
        let mut needed = linked.clone();
        if let Some(slices) = slices {
            needed
                .peers
                .extend(slice_members(&slices.held(), &needed.sites));
        }
        needed.peers.remove(own);
        let selection = NodeSelection::for_peers(&needed, metadata);
        self.nodes = Some(NodesAnswer {
            linked: linked.clone(),
            slices: sv,
            metadata: mv,
            selection: selection.clone(),
        });
        selection
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::testing::{adopted, listed, obj};
    use kube::runtime::watcher::Event;
    use serde_json::{Value, json};
    use topology_core::vocab::{Kind, SITE_LABEL_KEY};

    fn assignment(sites: &[&str]) -> Value {
        json!({"metadata": {"name": "x"}, "spec": {"sites": sites, "gatewayPools": ["p"]}})
    }

    fn meta(name: &str, site: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {SITE_LABEL_KEY: site}}})
    }

    /// Each answer equals the one worked out afresh, after every change of what it reads, and
    /// is kept (not worked out) while nothing it reads changed.
    #[test]
    fn answers_follow_their_caches_and_are_kept_between_changes() {
        let mut needs = Needs::default();
        let a = adopted("a");
        let assignments = listed(Kind::SiteGatewayPoolAssignment, vec![assignment(&["b"])]);
        assert!(!needs.heavy(&a, &assignments));
        assignments.apply(&Event::Apply(obj(assignment(&["a", "b"]))));
        assert!(
            needs.heavy(&a, &assignments),
            "the assignment now lists the own Site"
        );
        assert_eq!(needs.heavy.map(|(v, _)| v), Some(assignments.version()));

        let slices = listed(
            Kind::SiteNodeSlice,
            vec![json!({"metadata": {"name": "s"}, "siteName": "b",
                "nodes": [{"name": "w2"}]})],
        );
        let metadata = listed(Kind::Node, vec![meta("w1", "b")]);
        let linked = Linked {
            sites: ["a".to_string(), "b".to_string()].into(),
            peers: ["w1".to_string(), "n1".to_string()].into(),
        };
        let fresh = |needs: &mut Needs| {
            let got = needs.nodes(&linked, "n1", Some(&slices), Some(&metadata));
            let mut needed = linked.clone();
            needed
                .peers
                .extend(slice_members(&slices.held(), &needed.sites));
            needed.peers.remove("n1");
            assert_eq!(got, NodeSelection::for_peers(&needed, Some(&metadata)));
            got
        };
        // w2, a slice member, is not in the metadata yet: every Node is watched.
        assert!(matches!(fresh(&mut needs), NodeSelection::All { .. }));
        metadata.apply(&Event::Apply(obj(meta("w2", "b"))));
        assert!(matches!(fresh(&mut needs), NodeSelection::Sites(_)));
        slices.apply(&Event::Apply(obj(
            json!({"metadata": {"name": "s"}, "siteName": "b",
            "nodes": [{"name": "w2"}, {"name": "w3"}]}),
        )));
        assert!(matches!(fresh(&mut needs), NodeSelection::All { .. }));

        // Nothing it reads changed: the kept answer.
        let kept = needs.nodes(&linked, "n1", Some(&slices), Some(&metadata));
        assert_eq!(
            needs.nodes.as_ref().map(|a| (a.slices, a.metadata)),
            Some((Some(slices.version()), Some(metadata.version())))
        );
        assert!(matches!(kept, NodeSelection::All { .. }));
    }
}

//! `Resolver::manifests`: the changed objects written back as merge patches, read back through
//! the project's own decoder. For every mutation kind, on a cluster whose objects carry fields
//! the resolver does not model:
//!
//! - each written document decodes (`load::from_sources`) to its object, and every field it
//!   sets reads as the changed object's (a `null` where the changed object has none);
//! - the patches merged into the cluster's objects (RFC 7386, as `kubectl patch --type merge`
//!   does) decode to the changed objects, the fields the resolver does not read kept;
//! - that cluster resolves to the values of `Resolver::apply`: the manifests make the cluster
//!   the what-if describes.

use mtu_solver::report::ResolveOut;
use mtu_solver::whatif::{Input, apply_all};
use mtu_solver::{Decoded, Kind, Manifests, Mutation, Resolver, Settings, Unwritten, load};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use topology_core::decode::{RawCap, RawObject, RawUnderlay};
use topology_core::vocab::{PATH_MTU_ANNOTATION, UNDERLAY_ANNOTATION, UNDERLAY_MAX_ANNOTATION};

const GROUP: &str = "net.unbounded-cloud.io/v1alpha1";

/// Three Sites: `a` and `c` peered (cap 1300), `a` and `b` through pools `pa` and `pb` (the pool
/// peering capped 1380), gateways `gwa` and `gwb`. Objects carry what the resolver does not
/// read: other labels and annotations, health settings, status entries' WireGuard keys.
fn cluster() -> Vec<Value> {
    let site = |name: &str, i: u8, cap: Option<u32>| {
        let mut spec = json!({
            "nodeCidrs": [format!("10.{i}.0.0/16")],
            "podCidrAssignments": [{"cidrBlocks": [format!("10.1{i}.0.0/16")]}],
        });
        if let Some(c) = cap {
            spec["tunnelMTU"] = json!(c);
        }
        json!({"apiVersion": GROUP, "kind": "Site", "metadata": {"name": name}, "spec": spec})
    };
    let node = |name: &str, site: &str, ip: &str, pod: &str, extra: Value| {
        let mut n = json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"net.unbounded-cloud.io/site": site, "kubernetes.io/os": "linux"},
                "annotations": {"example.com/owner": "team-a"},
            },
            "spec": {"podCIDRs": [pod]},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}]},
        });
        merge_patch(&mut n, &extra);
        n
    };
    let pool = |name: &str, gw: &str, site: &str, ip: &str, cap: Option<u32>| {
        let mut p = json!({
            "apiVersion": GROUP,
            "kind": "GatewayPool",
            "metadata": {"name": name},
            "spec": {"type": "Internal", "nodeSelector": {"example.com/gateway": "true"}},
            "status": {"nodes": [{
                "name": gw, "siteName": site, "internalIPs": [ip], "wireGuardPublicKey": "k",
            }]},
        });
        if let Some(c) = cap {
            p["spec"]["tunnelMTU"] = json!(c);
        }
        p
    };
    let relation = |kind: &str, name: &str, spec: Value| json!({"apiVersion": GROUP, "kind": kind, "metadata": {"name": name}, "spec": spec});
    let health = json!({"enabled": true, "detectMultiplier": 3});
    vec![
        site("a", 0, Some(1450)),
        site("b", 1, None),
        site("c", 2, None),
        pool("pa", "gwa", "a", "10.0.0.10", Some(1400)),
        pool("pb", "gwb", "b", "10.1.0.10", None),
        relation(
            "SiteGatewayPoolAssignment",
            "asg-a",
            json!({"sites": ["a"], "gatewayPools": ["pa"]}),
        ),
        relation(
            "SiteGatewayPoolAssignment",
            "asg-b",
            json!({"sites": ["b"], "gatewayPools": ["pb"]}),
        ),
        relation(
            "GatewayPoolPeering",
            "pp",
            json!({"gatewayPools": ["pa", "pb"], "tunnelMTU": 1380, "healthCheckSettings": health}),
        ),
        relation(
            "SitePeering",
            "ac",
            json!({"sites": ["a", "c"], "tunnelMTU": 1300, "healthCheckSettings": health}),
        ),
        node(
            "wa1",
            "a",
            "10.0.0.1",
            "10.10.1.0/24",
            json!({"metadata": {"annotations": {UNDERLAY_MAX_ANNOTATION: "9000"}}}),
        ),
        node(
            "wa2",
            "a",
            "10.0.0.2",
            "10.10.2.0/24",
            json!({"metadata": {"annotations": {PATH_MTU_ANNOTATION: "wa1=1400"}}}),
        ),
        node(
            "gwa",
            "a",
            "10.0.0.10",
            "10.10.10.0/24",
            json!({"metadata": {"labels": {"net.unbounded-cloud.io/gateway-pool": "pa"}}}),
        ),
        node("wb1", "b", "10.1.0.1", "10.11.1.0/24", json!({})),
        node(
            "gwb",
            "b",
            "10.1.0.10",
            "10.11.10.0/24",
            json!({"metadata": {"labels": {"net.unbounded-cloud.io/gateway-pool": "pb"}}}),
        ),
        node("wc1", "c", "10.2.0.1", "10.12.1.0/24", json!({})),
    ]
}

/// Every mutation kind, each on its own.
fn mutations() -> Vec<Mutation> {
    let member = |kind, name: &str, member_kind, member: &str, add| Mutation::Member {
        kind,
        name: name.into(),
        member_kind,
        member: member.into(),
        add,
    };
    vec![
        Mutation::SetCap {
            kind: Kind::SitePeering,
            name: "ac".into(),
            mtu: 1200,
        },
        Mutation::SetCap {
            kind: Kind::GatewayPool,
            name: "pb".into(),
            mtu: 1350,
        },
        Mutation::SetCap {
            kind: Kind::Site,
            name: "a".into(),
            mtu: 0,
        },
        Mutation::ClearCap {
            kind: Kind::GatewayPoolPeering,
            name: "pp".into(),
        },
        Mutation::SetEnabled {
            kind: Kind::SitePeering,
            name: "ac".into(),
            enabled: false,
        },
        Mutation::SetEnabled {
            kind: Kind::SiteGatewayPoolAssignment,
            name: "asg-b".into(),
            enabled: false,
        },
        member(Kind::SitePeering, "ac", Kind::Site, "b", true),
        member(Kind::SitePeering, "ac", Kind::Site, "c", false),
        member(
            Kind::SiteGatewayPoolAssignment,
            "asg-a",
            Kind::GatewayPool,
            "pb",
            true,
        ),
        Mutation::Demote { node: "gwa".into() },
        Mutation::Promote {
            node: "wb1".into(),
            pool: "pb".into(),
        },
        Mutation::Underlay {
            node: "wa1".into(),
            mtu: 1400,
        },
        Mutation::AgentMtu(1400),
        Mutation::PathMtu {
            node: "wa2".into(),
            peer: "wa1".into(),
            mtu: None,
        },
        Mutation::PathMtu {
            node: "wa2".into(),
            peer: "gwa".into(),
            mtu: Some(1380),
        },
        Mutation::PathMtu {
            node: "wa1".into(),
            peer: "wb1".into(),
            mtu: Some(1350),
        },
    ]
}

/// Decodes objects given as JSON, one source each.
fn decode(objects: &[Value]) -> Decoded {
    load::from_sources(
        objects
            .iter()
            .enumerate()
            .map(|(i, o)| (format!("object-{i}.json"), o.to_string())),
    )
}

/// RFC 7386: what `kubectl patch --type merge` does to an object.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let Value::Object(t) = target else { return };
    for (k, v) in fields {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// What the resolver reads of an object, without where it was written: every field, as text.
fn read(o: &RawObject) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        f.insert(k.to_string(), v);
    };
    let cap = |c: &Option<RawCap>| format!("{:?}", c.as_ref().map(|c| (c.mtu, &c.invalid)));
    let underlay =
        |u: &Option<RawUnderlay>| format!("{:?}", u.as_ref().map(|u| (u.mtu, &u.invalid)));
    match o {
        RawObject::Site(s) => {
            put("spec.nodeCidrs", format!("{:?}", s.node_cidrs));
            put("spec.podCidrAssignments", format!("{:?}", s.pod_blocks));
            put("spec.tunnelMTU", cap(&s.cap));
            put(
                "spec.rest",
                format!("{:?}", (s.manage_cni, &s.local_cidrs, s.protocol)),
            );
        }
        RawObject::Pool(p) => {
            put("spec.tunnelMTU", cap(&p.cap));
            put(
                "spec.rest",
                format!(
                    "{:?}",
                    (p.internal, &p.node_selector, &p.routed_cidrs, p.protocol)
                ),
            );
            let status: Vec<_> = p
                .status_nodes
                .iter()
                .map(|n| {
                    (
                        &n.name,
                        &n.site_name,
                        &n.internal_ips,
                        &n.external_ips,
                        n.wg_port,
                    )
                })
                .collect();
            put("status.nodes", format!("{status:?}"));
        }
        RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) => {
            let names = |m: &[topology_core::decode::Member]| -> Vec<String> {
                m.iter().map(|x| x.name.clone()).collect()
            };
            put("spec.enabled", r.enabled.to_string());
            put("spec.sites", format!("{:?}", names(&r.sites)));
            put("spec.gatewayPools", format!("{:?}", names(&r.pools)));
            put("spec.tunnelMTU", cap(&r.cap));
            put("spec.rest", format!("{:?}", (r.mesh_nodes, r.protocol)));
        }
        RawObject::Node(n) => {
            for (k, v) in n.labels.iter() {
                put(&format!("metadata.labels.{k}"), v.to_string());
            }
            let a = "metadata.annotations";
            put(&format!("{a}.{UNDERLAY_ANNOTATION}"), underlay(&n.underlay));
            put(
                &format!("{a}.{UNDERLAY_MAX_ANNOTATION}"),
                underlay(&n.underlay_max),
            );
            let paths = n
                .path_mtu
                .as_ref()
                .filter(|p| !p.entries.is_empty())
                .map(|p| {
                    p.entries
                        .iter()
                        .map(|e| (e.peer.to_string(), e.mtu, e.invalid.clone()))
                        .collect::<Vec<_>>()
                });
            put(&format!("{a}.{PATH_MTU_ANNOTATION}"), format!("{paths:?}"));
            put(
                "status",
                format!("{:?}", (&n.internal_ips, &n.external_ips, &n.pod_cidrs)),
            );
        }
        other => put("object", format!("{:?}", other.label())),
    }
    f
}

/// The fields a patch sets, as `read` names them, with whether each is `null`.
fn set_fields(patch: &Value) -> Vec<(String, bool)> {
    fn walk(path: &str, v: &Value, out: &mut Vec<(String, bool)>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(&p, v, out);
                }
            }
            v => out.push((path.to_string(), v.is_null())),
        }
    }
    let mut out = Vec::new();
    walk("", patch, &mut out);
    out.retain(|(p, _)| !matches!(p.as_str(), "apiVersion" | "kind" | "metadata.name"));
    out
}

/// The changed objects (`apply_all`), with an `underlay` given in the settings written where
/// the manifests write it: the Node's annotation.
fn changed_objects(input: &Input, m: &Mutation) -> Vec<RawObject> {
    let mut after = apply_all(input, std::slice::from_ref(m)).expect("applies");
    for o in &mut after.objects {
        if let RawObject::Node(n) = o
            && let Some(v) = after.settings.underlay_overrides.get(&n.meta.name)
        {
            n.underlay = Some(RawUnderlay {
                mtu: *v,
                invalid: None,
            });
        }
    }
    after.objects
}

fn find<'a>(objects: &'a [RawObject], kind: Kind, name: &str) -> &'a RawObject {
    objects
        .iter()
        .find(|o| o.kind() == kind && o.name() == name)
        .unwrap_or_else(|| panic!("{kind}/{name}"))
}

/// Every value of a resolve, by node and value.
fn values(r: &ResolveOut) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for n in &r.nodes {
        out.insert(format!("{} fabric", n.name), n.fabric_mtu);
        for l in &n.links {
            out.insert(format!("{} link {}", n.name, l.peer), l.mtu);
        }
        for r in &n.routes {
            out.insert(
                format!("{} route {} {}", n.name, r.destination, r.kind),
                r.mtu,
            );
        }
        for d in &n.devices {
            out.insert(
                format!("{} device {:?} {:?}", n.name, d.name, d.peer),
                d.mtu,
            );
        }
        for p in n.published.iter().flatten() {
            out.insert(format!("{} published {}", n.name, p.destination), p.mtu);
        }
    }
    out
}

/// Each document of `manifests` decodes to its object alone, and every field it sets reads as
/// `changed`'s (a `null` where `changed` has none). Returns how many fields were checked.
fn documents_read_as_the_changed_objects(
    m: &Mutation,
    manifests: &Manifests,
    changed: &[RawObject],
) -> usize {
    let mut checked = 0;
    let stream = load::from_sources([("changes.yaml", manifests.to_yaml())]);
    assert_eq!(stream.objects.len(), manifests.objects().len(), "{m}");
    for (doc, man) in stream.objects.iter().zip(manifests.objects()) {
        assert_eq!((doc.kind(), doc.name()), (man.kind(), man.name()), "{m}");
        let alone = load::from_sources([("one.yaml", man.to_yaml())]);
        assert_eq!(alone.objects.len(), 1, "{m}: {}", man.to_yaml());
        // The YAML says what the JSON patch says.
        assert_eq!(read(&alone.objects[0]), read(doc), "{m}");
        let (written, want) = (read(doc), read(find(changed, man.kind(), man.name())));
        for (field, null) in set_fields(man.patch()) {
            let want = want
                .get(&field)
                .unwrap_or_else(|| panic!("{m}: {field} is not a field the decoder reads"));
            if null {
                assert_eq!(
                    want, "None",
                    "{m}: {field} is null, not the changed object's"
                );
            } else {
                let yaml = man.to_yaml();
                assert_eq!(written.get(&field), Some(want), "{m}: {field}\n{yaml}");
            }
            checked += 1;
        }
    }
    checked
}

/// `objects` with each manifest's patch merged into its object, as `kubectl patch --type merge`
/// merges it.
fn merged(m: &Mutation, objects: &[Value], manifests: &Manifests) -> Vec<Value> {
    let mut merged = objects.to_vec();
    for man in manifests.objects() {
        let target = merged
            .iter_mut()
            .find(|o| o["kind"] == man.kind().as_str() && o["metadata"]["name"] == man.name())
            .unwrap_or_else(|| panic!("{m}: {}/{} is not in the cluster", man.kind(), man.name()));
        merge_patch(target, man.patch());
    }
    // What the resolver does not read is kept, and no status is written.
    for (o, before) in merged.iter().zip(objects) {
        for field in [
            "/metadata/annotations/example.com~1owner",
            "/metadata/labels/kubernetes.io~1os",
            "/spec/healthCheckSettings",
            "/status",
        ] {
            assert_eq!(o.pointer(field), before.pointer(field), "{m}: {field}");
        }
    }
    merged
}

#[test]
fn written_manifests_read_back_as_the_changed_objects() {
    let objects = cluster();
    let decoded = decode(&objects);
    let findings: Vec<_> = decoded
        .objects
        .iter()
        .flat_map(|o| &o.meta().diags)
        .chain(&decoded.diagnostics)
        .collect();
    assert!(
        findings.is_empty(),
        "the cluster decodes cleanly: {findings:?}"
    );
    let resolver = Resolver::new(decoded.clone(), Settings::default());
    assert!(!resolver.has_errors(), "{:?}", resolver.diagnostics());
    let input = Input {
        objects: decoded.objects,
        diagnostics: decoded.diagnostics,
        settings: Settings::default(),
    };
    let mut writing = std::collections::HashSet::new();
    for m in mutations() {
        let manifests = resolver
            .manifests(std::slice::from_ref(&m))
            .expect("applies");
        let changed = changed_objects(&input, &m);
        if documents_read_as_the_changed_objects(&m, &manifests, &changed) > 0 {
            writing.insert(std::mem::discriminant(&m));
        }
        // Merged into the cluster, the patches give the changed objects.
        let after = decode(&merged(&m, &objects, &manifests));
        for o in &changed {
            let mut want = read(o);
            let got = read(find(&after.objects, o.kind(), o.name()));
            if matches!(m, Mutation::Demote { .. }) && o.name() == "pa" {
                // The pool's status is its controller's: listed, not written.
                want.remove("status.nodes");
                let removed = vec!["gwa".to_string()];
                let status = Unwritten::PoolStatus {
                    pool: "pa".into(),
                    removed,
                    added: vec![],
                };
                assert_eq!(manifests.unwritten(), [status], "{m}");
            }
            for (k, v) in &want {
                assert_eq!(got.get(k), Some(v), "{m}: {} {k}", o.label());
            }
        }
        // That cluster, with the agent's setting, resolves to what `apply` resolves.
        let mut settings = Settings::default();
        for u in manifests.unwritten() {
            if let Unwritten::AgentMtu { mtu } = u {
                settings.cfg_mtu = *mtu;
            }
        }
        let applied = resolver.apply(std::slice::from_ref(&m)).unwrap().plan_all();
        let patched = Resolver::new(after, settings).plan_all();
        let yaml = manifests.to_yaml();
        assert_eq!(values(&patched), values(&applied), "{m}: {yaml}");
        assert_eq!(patched.diagnostics, applied.diagnostics, "{m}");
    }
    // Every kind but the agent's mtu writes a field.
    assert_eq!(writing.len(), 8);
}

#[test]
fn the_agent_mtu_is_a_setting_and_nothing_else_is_written() {
    let resolver = Resolver::new(decode(&cluster()), Settings::default());
    let m = resolver.manifests(&[Mutation::AgentMtu(1400)]).unwrap();
    assert!(m.objects().is_empty());
    assert_eq!(m.unwritten(), [Unwritten::AgentMtu { mtu: 1400 }]);
    assert_eq!(
        m.to_yaml(),
        "# not an object: the agent's mtu setting (--mtu, environment MTU) is 1400 on every node\n"
    );
    assert!(resolver.manifests(&[]).unwrap().is_empty());
    // A change undone by a later mutation writes nothing.
    let undone = [
        Mutation::SetCap {
            kind: Kind::Site,
            name: "a".into(),
            mtu: 1300,
        },
        Mutation::SetCap {
            kind: Kind::Site,
            name: "a".into(),
            mtu: 1450,
        },
    ];
    assert_eq!(resolver.manifests(&undone).unwrap(), Manifests::default());
}

/// One example of what each mutation kind writes, in full: the shape an operator reads.
#[test]
fn each_kind_is_written_as_an_operator_writes_it() {
    let resolver = Resolver::new(decode(&cluster()), Settings::default());
    let yaml = |m: Mutation| resolver.manifests(&[m]).unwrap().to_yaml();
    assert_eq!(
        yaml(Mutation::SetCap {
            kind: Kind::SitePeering,
            name: "ac".into(),
            mtu: 1200
        }),
        "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SitePeering\nmetadata:\n  name: ac\nspec:\n  tunnelMTU: 1200\n"
    );
    assert_eq!(
        yaml(Mutation::ClearCap {
            kind: Kind::GatewayPoolPeering,
            name: "pp".into()
        }),
        "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPoolPeering\nmetadata:\n  name: pp\nspec:\n  tunnelMTU: null\n"
    );
    assert_eq!(
        yaml(Mutation::SetEnabled {
            kind: Kind::SitePeering,
            name: "ac".into(),
            enabled: false
        }),
        "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SitePeering\nmetadata:\n  name: ac\nspec:\n  enabled: false\n"
    );
    assert_eq!(
        yaml(Mutation::Member {
            kind: Kind::SitePeering,
            name: "ac".into(),
            member_kind: Kind::Site,
            member: "b".into(),
            add: true
        }),
        "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SitePeering\nmetadata:\n  name: ac\nspec:\n  sites:\n  - a\n  - c\n  - b\n"
    );
    assert_eq!(
        yaml(Mutation::Demote { node: "gwa".into() }),
        "# not an object: GatewayPool/pa status.nodes (its controller's) without gwa\n\
         apiVersion: v1\nkind: Node\nmetadata:\n  name: gwa\n  labels:\n    net.unbounded-cloud.io/gateway-pool: \"\"\n"
    );
    assert_eq!(
        yaml(Mutation::Promote {
            node: "wb1".into(),
            pool: "pb".into()
        }),
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: wb1\n  labels:\n    net.unbounded-cloud.io/gateway-pool: pb\n"
    );
    assert_eq!(
        yaml(Mutation::Underlay {
            node: "wa1".into(),
            mtu: 1400
        }),
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: wa1\n  annotations:\n    mtu.unbounded-cloud.io/underlay-mtu: \"1400\"\n"
    );
    assert_eq!(
        yaml(Mutation::PathMtu {
            node: "wa2".into(),
            peer: "gwa".into(),
            mtu: Some(1380)
        }),
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: wa2\n  annotations:\n    mtu.unbounded-cloud.io/path-mtu: \"wa1=1400,gwa=1380\"\n"
    );
    assert_eq!(
        yaml(Mutation::PathMtu {
            node: "wa2".into(),
            peer: "wa1".into(),
            mtu: None
        }),
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: wa2\n  annotations:\n    mtu.unbounded-cloud.io/path-mtu: null\n"
    );
}

#[test]
fn several_mutations_of_one_object_are_one_document() {
    let resolver = Resolver::new(decode(&cluster()), Settings::default());
    let m = resolver
        .manifests(&[
            Mutation::Underlay {
                node: "gwa".into(),
                mtu: 1400,
            },
            Mutation::Demote { node: "gwa".into() },
            Mutation::PathMtu {
                node: "gwa".into(),
                peer: "wa1".into(),
                mtu: Some(1300),
            },
            Mutation::SetCap {
                kind: Kind::Site,
                name: "b".into(),
                mtu: 1400,
            },
        ])
        .unwrap();
    let names: Vec<(Kind, &str)> = m.objects().iter().map(|o| (o.kind(), o.name())).collect();
    assert_eq!(names, [(Kind::Site, "b"), (Kind::Node, "gwa")]);
    assert_eq!(
        m.objects()[1].patch(),
        &json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "gwa",
                "labels": {"net.unbounded-cloud.io/gateway-pool": ""},
                "annotations": {
                    UNDERLAY_ANNOTATION: "1400",
                    PATH_MTU_ANNOTATION: "wa1=1300",
                },
            },
        })
    );
}

#[test]
fn manifests_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Manifests>();
}

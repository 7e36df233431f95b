//! The node agent's state across turns resolves every turn as a fresh agent does: what a turn
//! that applied keeps (`agent::reconcile::Kept`: the topology, the plan's footprint) and what
//! the source tracks of the changes since (`mtu_solver::locality::Tracker`), driven through
//! `reconcile::resolve` and `reconcile::apply` over random streams of events (caps set, lowered,
//! cleared and made invalid, relationships toggled, underlays changed), give after every turn
//! the plan a turn without any kept state gives: unreached turns keep a plan equal to a fresh
//! one, caps taken into the kept topology plan as a fresh build. Regressions persist in the
//! root `proptest-regressions/`.

use dataplane_linux::DesiredState;
use mtu_solver::locality::{Fingerprint, Tracker};
use mtu_solver::whatif::{Input, Mutation, apply};
use proptest::prelude::*;
use std::net::IpAddr;
use std::sync::Arc;
use test_utils::testkit::{TopoSpec, arb_spec, proptest_config};
use topology_core::decode::{Decoded, RawObject, RawUnderlay, decode};
use topology_core::vocab::Kind;
use unbounded_mtu::agent::applier::{Applied, Applier};
use unbounded_mtu::agent::input::{Input as TurnInput, Objects, Piece};
use unbounded_mtu::agent::probing::Probed;
use unbounded_mtu::agent::reconcile::{self, Kept, Turn};
use unbounded_mtu::settings;

/// A kernel that holds every plan at once.
struct Holding;

impl Applier for Holding {
    fn detect_underlay(
        &self,
        _: &DesiredState,
        _: &[IpAddr],
    ) -> dataplane_linux::Result<Option<u32>> {
        Ok(None)
    }

    fn apply(&self, _: &DesiredState) -> dataplane_linux::Result<Applied> {
        Ok(Applied {
            in_kernel: true,
            ..Applied::default()
        })
    }

    fn remove_owned(&self) -> dataplane_linux::Result<Applied> {
        Ok(Applied::default())
    }
}

fn agent(node: &str) -> settings::Agent {
    use clap::Parser;
    let argv = [
        "unbounded-mtu",
        "agent",
        "--node-name",
        node,
        "--underlay-mtu",
        "1500",
    ];
    let cli = unbounded_mtu::cli::Cli::try_parse_from(argv).expect("arguments");
    let unbounded_mtu::cli::Command::Agent(args) = cli.command else {
        panic!("not the agent command");
    };
    settings::Agent::from_args(&args).expect("settings")
}

fn objects(spec: &TopoSpec) -> Vec<RawObject> {
    let mut out = Vec::new();
    for (i, doc) in spec.documents().iter().enumerate() {
        let name = format!("doc{i}.yaml");
        out.extend(decode([(name.as_str(), doc.as_bytes())]).objects);
    }
    out
}

/// The input of one turn as a source that re-reads everything gives it: its delta from the
/// tracker, its objects in one piece.
fn turn_input(tracker: &mut Tracker, input: &Input) -> TurnInput {
    tracker.set(Fingerprint::of(&input.objects, &input.diagnostics));
    let mut d = Decoded::default();
    d.objects = input.objects.clone();
    d.diagnostics = input.diagnostics.clone();
    let piece = Arc::new(Piece::of(d));
    TurnInput::new(tracker.delta(), move || {
        Objects::new(vec![Arc::from([piece])])
    })
}

/// One turn: the plan's document when it resolved (`None`: unreached), and what it keeps.
fn turn(
    s: &settings::Agent,
    input: TurnInput,
    last: Option<Kept>,
) -> Result<(Option<serde_json::Value>, Option<Kept>), String> {
    match reconcile::resolve(s, input, &Holding, &Probed::default(), Some(1500), last) {
        Ok(Turn::Resolved(r)) => {
            let (outcome, kept) = reconcile::apply(*r, &Holding).map_err(|e| e.to_string())?;
            // Debug builds resolve every turn that used kept state afresh as well: one that
            // planned otherwise is corrected, which must not happen.
            if outcome.corrected {
                return Err("the kept state planned otherwise than a full resolve".into());
            }
            let doc = serde_json::to_value(&*outcome.document).map_err(|e| e.to_string())?;
            Ok((Some(doc), Some(kept)))
        }
        Ok(Turn::Unreached(k)) => Ok((None, Some(*k))),
        Err(e) => Err(e.to_string()),
    }
}

/// One random event.
#[derive(Clone, Debug)]
struct Ev {
    what: u8,
    pick: prop::sample::Index,
    mtu: u32,
}

fn arb_ev() -> impl Strategy<Value = Ev> {
    (0u8..9, any::<prop::sample::Index>(), 576u32..9000).prop_map(|(what, pick, mtu)| Ev {
        what,
        pick,
        mtu,
    })
}

/// Applies `ev` to `input`: mostly caps, sometimes a relationship toggled, a Node's underlay
/// annotation or an invalid cap (a mutation that does not fit is no event).
fn happen(input: &mut Input, ev: &Ev) {
    const CAPPED: [Kind; 5] = [
        Kind::Site,
        Kind::GatewayPool,
        Kind::SitePeering,
        Kind::SiteGatewayPoolAssignment,
        Kind::GatewayPoolPeering,
    ];
    let of = |kinds: &[Kind]| -> Vec<(Kind, String)> {
        input
            .objects
            .iter()
            .filter(|o| kinds.contains(&o.kind()))
            .map(|o| (o.kind(), o.name().to_string()))
            .collect()
    };
    let (caps, relations, nodes) = (of(&CAPPED), of(&CAPPED[2..]), of(&[Kind::Node]));
    let pick = |v: &[(Kind, String)]| v.get(ev.pick.index(v.len().max(1))).cloned();
    let m = match ev.what {
        0..=4 => pick(&caps).map(|(kind, name)| Mutation::SetCap {
            kind,
            name,
            mtu: ev.mtu,
        }),
        5 => pick(&caps).map(|(kind, name)| Mutation::ClearCap { kind, name }),
        6 => pick(&relations).map(|(kind, name)| Mutation::SetEnabled {
            kind,
            name,
            enabled: ev.mtu % 2 == 0,
        }),
        7 => {
            // A Node's underlay annotation edited.
            let name = pick(&nodes).map(|(_, n)| n).unwrap_or_default();
            for o in &mut input.objects {
                if let RawObject::Node(n) = o
                    && *n.meta.name == *name
                {
                    n.underlay = Some(RawUnderlay {
                        mtu: ev.mtu.min(1500),
                        invalid: None,
                    });
                }
            }
            None
        }
        _ => pick(&caps).map(|(kind, name)| Mutation::SetCap { kind, name, mtu: 0 }),
    };
    if let Some(m) = m {
        let _ = apply(input, &m);
    }
}

proptest! {
    #![proptest_config(proptest_config(64, concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/agent_state.txt")))]

    /// After every event, the agent that kept its state holds the plan of a fresh agent.
    #[test]
    fn kept_state_plans_as_a_fresh_agent(
        spec in arb_spec(),
        events in prop::collection::vec(arb_ev(), 1..10),
        which in any::<prop::sample::Index>(),
    ) {
        let mut input = Input { objects: objects(&spec), diagnostics: Vec::new(), settings: Default::default() };
        let names: Vec<String> = input.build_topology().nodes.iter().map(|n| n.name.to_string()).collect();
        let Some(node) = names.get(which.index(names.len().max(1))) else { return Ok(()) };
        let s = agent(node);
        let mut tracker = Tracker::default();
        let Ok((Some(mut applied), mut kept)) = turn(&s, turn_input(&mut tracker, &input), None) else {
            return Ok(());
        };
        tracker.mark();
        for ev in &events {
            happen(&mut input, ev);
            let fresh = turn(&s, turn_input(&mut Tracker::default(), &input), None);
            let kept_turn = turn(&s, turn_input(&mut tracker, &input), kept.take());
            match (fresh, kept_turn) {
                (Ok((Some(want), _)), Ok((got, k))) => {
                    if let Some(doc) = got {
                        applied = doc;
                        tracker.mark();
                    }
                    prop_assert_eq!(&applied, &want, "{} after {:?}", node, ev);
                    kept = k;
                }
                // The node cannot be planned: both agents fail alike, and a fresh turn follows.
                (Err(a), Err(b)) => {
                    prop_assert_eq!(a, b);
                    return Ok(());
                }
                (a, b) => prop_assert!(false, "{} after {:?}: fresh {:?}, kept {:?}", node, ev,
                    a.map(|x| x.0.is_some()), b.map(|x| x.0.is_some())),
            }
        }
    }
}

//! Any bytes: decode (as YAML, then as a JSON value when they parse as JSON) and build the
//! topology. Invariant 9: no panic on any input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topology_core::decode::decode;
use topology_core::model::Topology;

fuzz_target!(|data: &[u8]| {
    let d = decode([("fuzz.yaml", data)]);
    let topo = Topology::build(d.objects.iter(), d.diagnostics.iter().cloned());
    std::hint::black_box(&topo);
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let mut d = topology_core::decode::Decoded::default();
        d.add_json("fuzz.json", v);
        let topo = Topology::build(d.objects.iter(), d.diagnostics.iter().cloned());
        std::hint::black_box(&topo);
    }
});

//! `explain` hop by hop: a learned route lists each hop of its forwarding paths (link kind and
//! protocol, link MTU, caps, what it adds to the route) with the binding hop marked, in the
//! table and in JSON; a hop that leaves a gateway shows what the gateway published, where, and
//! what this input would publish instead, and a differing annotation is `W-PUBLISHED-STALE` in
//! `explain` and `resolve` alike.

mod support;

use serde_json::Value;
use std::path::PathBuf;

fn path(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

/// The binary's standard output with `args`, which must exit 0.
async fn out(args: &[&str]) -> String {
    let o = support::run_bin(args, &[]).await;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

async fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&out(&all).await).expect("JSON output")
}

/// `(from, to, binds)` of every hop of the one value explained.
fn hop_ends(doc: &Value) -> Vec<(String, String, bool)> {
    let values = doc["values"].as_array().expect("values");
    assert_eq!(values.len(), 1, "{doc:#}");
    values[0]["hops"]
        .as_array()
        .expect("hops")
        .iter()
        .map(|h| {
            (
                h["from"].as_str().unwrap_or("").to_string(),
                h["to"].as_str().unwrap_or("").to_string(),
                h["binds"].as_bool().expect("binds"),
            )
        })
        .collect()
}

fn ends(want: &[(&str, &str, bool)]) -> Vec<(String, String, bool)> {
    want.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), *c))
        .collect()
}

fn codes(doc: &Value) -> Vec<String> {
    doc["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| d["code"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The transit chain: `wa`'s route to C is bound at the ga → gb hop, by pa-pb's cap.
#[tokio::test]
async fn transit_chain_names_the_binding_hop() {
    let dir = path("../examples/04-transit-chain");
    let args = [
        "explain",
        "-f",
        &dir,
        "--node",
        "wa",
        "--destination",
        "10.103.1.5",
    ];
    let doc = json(&args).await;
    assert_eq!(
        hop_ends(&doc),
        ends(&[
            ("wa", "ga", false),
            ("ga", "gb", true),
            ("gb", "gc", false),
            ("gc", "Site/C", false),
        ])
    );
    assert_eq!(doc["values"][0]["hopsNotShown"], 0);
    let hop = &doc["values"][0]["hops"][1];
    assert_eq!(hop["kind"], "transit");
    assert_eq!(hop["protocol"], "WireGuard");
    assert_eq!(hop["mtu"], 1390);
    assert_eq!(hop["limit"], 1390);
    assert_eq!(hop["bound"]["object"], "GatewayPoolPeering/pa-pb");
    assert_eq!(hop["bound"]["field"], "spec.tunnelMTU");
    let caps: Vec<&str> = hop["caps"]
        .as_array()
        .expect("caps")
        .iter()
        .map(|c| c["term"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        caps,
        [
            "GatewayPoolPeering/pa-pb spec.tunnelMTU",
            "Site/SA spec.tunnelMTU"
        ]
    );
    // The first hop adds its link MTU, the last adds nothing (no cap on the delivery).
    assert_eq!(doc["values"][0]["hops"][0]["limit"], 1410);
    assert_eq!(doc["values"][0]["hops"][3]["limit"], Value::Null);
    assert_eq!(doc["values"][0]["hops"][3]["mtu"], Value::Null);

    let table = out(&args).await;
    let marked: Vec<&str> = table.lines().filter(|l| l.ends_with("<- binds")).collect();
    assert!(
        marked.iter().any(|l| l.starts_with(
            "    ga -> gb (transit, WireGuard): link 1390; caps GatewayPoolPeering/pa-pb spec.tunnelMTU 1390"
        ) && l.contains("adds 1390 (GatewayPoolPeering/pa-pb spec.tunnelMTU)")),
        "{table}"
    );
    assert!(
        table.lines().any(|l| l
            == "    wa -> ga (uplink, WireGuard): link 1410; caps Site/SA spec.tunnelMTU 1410; adds 1410 (Site/SA spec.tunnelMTU)"),
        "{table}"
    );
}

/// A stale annotation binds the route: the hop says where it was written and what this input
/// would publish; `explain` and `resolve` both warn.
#[tokio::test]
async fn stale_published_value_is_explained_and_warned() {
    let file = path("tests/fixtures/published/stale.yaml");
    let args = [
        "explain",
        "-f",
        &file,
        "--node",
        "wa",
        "--destination",
        "10.103.1.9",
    ];
    let doc = json(&args).await;
    assert_eq!(
        hop_ends(&doc),
        ends(&[("wa", "g", false), ("g", "Site/C", true)])
    );
    let p = &doc["values"][0]["hops"][1]["published"];
    assert_eq!(p["term"]["value"], 1300);
    assert_eq!(p["term"]["object"], "GatewayPoolNode/g");
    assert_eq!(
        p["term"]["field"],
        "metadata.annotations.mtu.unbounded-cloud.io/forwarding-mtus"
    );
    assert!(
        p["term"]["location"]
            .as_str()
            .is_some_and(|l| l.ends_with("stale.yaml:53")),
        "{p:#}"
    );
    assert_eq!(p["wouldPublish"], 1400);
    assert_eq!(p["stale"], true);
    assert_eq!(codes(&doc), ["W-PUBLISHED-STALE"]);

    let table = out(&args).await;
    assert!(
        table.contains(
            "      published by g 1300 (GatewayPoolNode/g metadata.annotations.mtu.unbounded-cloud.io/forwarding-mtus) at "
        ) && table.contains("stale.yaml:53; this input would publish 1400: W-PUBLISHED-STALE"),
        "{table}"
    );

    let resolved = json(&["resolve", "-f", &file]).await;
    assert_eq!(codes(&resolved), ["W-PUBLISHED-STALE"]);
    let d = &resolved["diagnostics"][0];
    assert_eq!(d["object"], "GatewayPoolNode/g");
    assert!(
        d["message"].as_str().is_some_and(|m| m.contains(
            "10.103.0.0/16 published 1300, would publish 1400; the gateway has not caught up, or the input is not what the cluster runs"
        )),
        "{d:#}"
    );
    // A warning: the default --fail-on (error) lets both commands succeed (checked by `out`);
    // --fail-on warning does not.
    let o = support::run_bin(["resolve", "-f", &file, "--fail-on", "warning"], &[]).await;
    assert_eq!(o.status.code(), Some(1));
}

/// The annotation agrees with what this input publishes: no finding, and the hop says so.
#[tokio::test]
async fn agreeing_published_value_raises_nothing() {
    let file = path("tests/fixtures/published/agrees.yaml");
    let doc = json(&[
        "explain",
        "-f",
        &file,
        "--node",
        "wa",
        "--destination",
        "10.103.1.9",
    ])
    .await;
    let p = &doc["values"][0]["hops"][1]["published"];
    assert_eq!(p["term"]["value"], 1400);
    assert_eq!(p["wouldPublish"], 1400);
    assert_eq!(p["stale"], false);
    assert_eq!(codes(&doc), Vec::<String>::new());
    let resolved = json(&["resolve", "-f", &file]).await;
    assert_eq!(codes(&resolved), Vec::<String>::new());
}

/// Direct routes, links and devices carry no hops; a gateway's transit route reads no
/// published value.
#[tokio::test]
async fn hops_only_on_learned_routes() {
    let dir = path("../examples/04-transit-chain");
    let doc = json(&["explain", "-f", &dir, "--node", "ga"]).await;
    for v in doc["values"].as_array().expect("values") {
        let item = v["item"].as_str().unwrap_or("");
        let learned = item.contains(", transit, ");
        assert_eq!(v.get("hops").is_some(), learned, "{item}");
        for h in v["hops"].as_array().into_iter().flatten() {
            assert!(h.get("published").is_none(), "{item}: {h:#}");
        }
    }
}

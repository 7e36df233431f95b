//! The admission policy of `deploy/components/admission-policy`: RBAC lets the agent patch every
//! Node, Pod and GatewayPoolNode, and the policy narrows that to those of the node it runs on.
//! Its CEL expressions (match conditions, variables, validations, in order, as the API server
//! evaluates them) are run over sample admission requests of the agent's service account: its
//! own objects are admitted, another node's are denied with the policy's message, a token that
//! names no node is denied, and other users are not the policy's business.

mod support;

use cel_interpreter::{Context, Program, Value as Cel};
use serde_json::{Map, Value, json};

const AGENT: &str = "system:serviceaccount:kube-system:unbounded-mtu";
const NODE_NAME: &str = "authentication.kubernetes.io/node-name";
const POD_NAME: &str = "authentication.kubernetes.io/pod-name";

/// The policy's expressions.
struct Policy {
    match_conditions: Vec<String>,
    variables: Vec<(String, String)>,
    /// Each validation's expression and message.
    validations: Vec<(String, String)>,
    /// The resources its rules match.
    resources: Vec<String>,
}

fn policy() -> Policy {
    let path = support::deploy_dir().join("components/admission-policy/policy.yaml");
    let docs = support::yaml_documents(&path);
    let p = docs
        .iter()
        .find(|d| d["kind"] == "ValidatingAdmissionPolicy")
        .expect("a ValidatingAdmissionPolicy");
    let binding = docs
        .iter()
        .find(|d| d["kind"] == "ValidatingAdmissionPolicyBinding")
        .expect("its binding");
    assert_eq!(binding["spec"]["policyName"], p["metadata"]["name"]);
    assert_eq!(binding["spec"]["validationActions"], json!(["Deny"]));
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let text = |v: &Value| v.as_str().expect("a string").to_string();
    Policy {
        match_conditions: list(&p["spec"]["matchConditions"])
            .iter()
            .map(|m| text(&m["expression"]))
            .collect(),
        variables: list(&p["spec"]["variables"])
            .iter()
            .map(|v| (text(&v["name"]), text(&v["expression"])))
            .collect(),
        validations: list(&p["spec"]["validations"])
            .iter()
            .map(|v| (text(&v["expression"]), text(&v["message"])))
            .collect(),
        resources: list(&p["spec"]["matchConstraints"]["resourceRules"])
            .iter()
            .flat_map(|r| list(&r["resources"]))
            .map(|r| text(&r))
            .collect(),
    }
}

fn eval(expr: &str, request: &Value, object: &Value, variables: &Map<String, Value>) -> Cel {
    let program = Program::compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let mut ctx = Context::default();
    for (name, v) in [
        ("request", request.clone()),
        ("object", object.clone()),
        ("variables", Value::Object(variables.clone())),
    ] {
        ctx.add_variable(name, v)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    program
        .execute(&ctx)
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// The API server's answer: `None` when the policy does not apply to the request, else
/// admitted, or denied with the first failing validation's message.
fn admit(p: &Policy, request: &Value, object: &Value) -> Option<Result<(), String>> {
    let mut variables = Map::new();
    for m in &p.match_conditions {
        if eval(m, request, object, &variables) != Cel::Bool(true) {
            return None;
        }
    }
    for (name, expr) in &p.variables {
        let v = match eval(expr, request, object, &variables) {
            Cel::String(s) => json!(s.as_str()),
            other => panic!("variable {name} is {other:?}"),
        };
        variables.insert(name.clone(), v);
    }
    for (expr, message) in &p.validations {
        if eval(expr, request, object, &variables) != Cel::Bool(true) {
            return Some(Err(message.clone()));
        }
    }
    Some(Ok(()))
}

/// An UPDATE of `resource` by `user`, whose token names `node` and `pod`.
fn request(resource: &str, user: &str, node: Option<&str>, pod: Option<&str>) -> Value {
    let mut extra = Map::new();
    if let Some(n) = node {
        extra.insert(NODE_NAME.into(), json!([n]));
    }
    if let Some(p) = pod {
        extra.insert(POD_NAME.into(), json!([p]));
    }
    json!({"operation": "UPDATE", "resource": {"resource": resource},
           "userInfo": {"username": user, "extra": extra}})
}

/// The agent of node n1, running as Pod agent-x.
fn agent(resource: &str) -> Value {
    request(resource, AGENT, Some("n1"), Some("agent-x"))
}

fn named(name: &str) -> Value {
    json!({"metadata": {"name": name}})
}

#[test]
fn the_agent_changes_its_own_node_and_pod_and_nothing_of_another_node() {
    let p = policy();
    let denied = |m: &str| Some(Err(m.to_string()));
    assert_eq!(admit(&p, &agent("nodes"), &named("n1")), Some(Ok(())));
    assert_eq!(
        admit(&p, &agent("nodes"), &named("n2")),
        denied("an agent may change only the Node it runs on")
    );
    // The annotations it owns on its Node (`underlay-mtu`, `path-mtu` from probes): on its own
    // Node only.
    let annotated = |name: &str| {
        json!({"metadata": {"name": name, "annotations": {
            "mtu.unbounded-cloud.io/underlay-mtu": "1500",
            "mtu.unbounded-cloud.io/path-mtu": "b=1400"}}})
    };
    assert_eq!(admit(&p, &agent("nodes"), &annotated("n1")), Some(Ok(())));
    assert_eq!(
        admit(&p, &agent("nodes"), &annotated("n2")),
        denied("an agent may change only the Node it runs on")
    );
    let pod =
        |name: &str, node: &str| json!({"metadata": {"name": name}, "spec": {"nodeName": node}});
    assert_eq!(
        admit(&p, &agent("pods"), &pod("agent-x", "n1")),
        Some(Ok(()))
    );
    assert_eq!(
        admit(&p, &agent("pods"), &pod("web-1", "n1")),
        denied("an agent may change only its own Pod"),
        "another Pod on the same node"
    );
}

#[test]
fn the_agent_changes_the_gateway_pool_node_of_its_node_by_spec_or_by_name() {
    let p = policy();
    let gpn = |name: &str, node: Option<&str>| match node {
        Some(n) => json!({"metadata": {"name": name}, "spec": {"nodeName": n}}),
        None => named(name),
    };
    let message = "an agent may change only the GatewayPoolNode of the node it runs on";
    let r = agent("gatewaypoolnodes");
    assert_eq!(admit(&p, &r, &gpn("gpn-n1", Some("n1"))), Some(Ok(())));
    assert_eq!(
        admit(&p, &r, &gpn("gpn-n1", Some("n2"))),
        Some(Err(message.into()))
    );
    assert_eq!(admit(&p, &r, &gpn("n1", None)), Some(Ok(())));
    assert_eq!(admit(&p, &r, &gpn("n2", None)), Some(Err(message.into())));
}

#[test]
fn a_token_without_a_node_is_denied_and_other_users_are_not_its_business() {
    let p = policy();
    let unbound = request("nodes", AGENT, None, None);
    let verdict = admit(&p, &unbound, &named("n1"));
    assert!(
        matches!(&verdict, Some(Err(m)) if m.contains("names no node")),
        "{verdict:?}"
    );
    let unbound = json!({"operation": "UPDATE", "resource": {"resource": "nodes"},
                         "userInfo": {"username": AGENT}});
    assert!(matches!(admit(&p, &unbound, &named("n1")), Some(Err(_))));
    // The agent's service account in another namespace (an overlay's) is still the agent.
    let moved = request(
        "nodes",
        "system:serviceaccount:net:unbounded-mtu",
        Some("n1"),
        None,
    );
    assert!(matches!(admit(&p, &moved, &named("n2")), Some(Err(_))));
    for user in [
        "system:node:n1",
        "system:serviceaccount:kube-system:other",
        "system:serviceaccount:kube-system:unbounded-mtu-installer",
        "admin",
    ] {
        let r = request("nodes", user, Some("n1"), None);
        assert_eq!(admit(&p, &r, &named("n2")), None, "{user}");
    }
}

#[test]
fn the_policy_covers_every_resource_rbac_lets_the_agent_patch() {
    let p = policy();
    let rbac = support::yaml_documents(&support::deploy_dir().join("rbac.yaml"));
    let patched: Vec<String> = rbac
        .iter()
        .filter(|d| matches!(d["kind"].as_str(), Some("ClusterRole" | "Role")))
        .flat_map(|d| d["rules"].as_array().cloned().unwrap_or_default())
        .filter(|r| {
            r["verbs"]
                .as_array()
                .is_some_and(|v| v.iter().any(|v| v == "patch" || v == "update"))
        })
        .flat_map(|r| r["resources"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| r.as_str().map(str::to_string))
        .filter(|r| r != "events")
        .collect();
    assert!(!patched.is_empty());
    for r in &patched {
        assert!(
            p.resources.contains(r),
            "RBAC lets the agent patch {r}, which the policy does not cover: {:?}",
            p.resources
        );
    }
}

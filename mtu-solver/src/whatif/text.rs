//! The textual form of a mutation: `VERB ARGUMENT`, the verbs named like the `what-if` flags
//! (`set SitePeering/ab=1400`, `clear GatewayPool/p`, `demote g1`, `agent-mtu 1400`).
//! [`Mutation`]'s `FromStr` reads exactly what its `Display` writes; kinds are read
//! case-insensitively and written as in manifests. It serializes as that text.

use super::mutation::Mutation;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use topology_core::vocab::Kind;

/// The form of each verb's text, for messages.
const SET: &str = "set KIND/NAME=MTU";
const CLEAR: &str = "clear KIND/NAME";
const ENABLE: &str = "enable KIND/NAME";
const DISABLE: &str = "disable KIND/NAME";
const ADD_MEMBER: &str = "add-member KIND/NAME=KIND/MEMBER";
const REMOVE_MEMBER: &str = "remove-member KIND/NAME=KIND/MEMBER";
const DEMOTE: &str = "demote NODE";
const PROMOTE: &str = "promote NODE=POOL";
const UNDERLAY: &str = "underlay NODE=MTU";
const AGENT_MTU: &str = "agent-mtu MTU";
const PATH: &str = "path NODE=PEER:MTU";

/// The verbs a mutation's text starts with.
pub const VERBS: &str = "set, clear, enable, disable, add-member, remove-member, demote, promote, underlay, agent-mtu, path";

/// Why a mutation's text does not parse. Every variant but [`UnknownVerb`](Self::UnknownVerb)
/// names the form the verb expects (`set KIND/NAME=MTU`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseMutationError {
    /// The text does not start with a known verb.
    #[error("unknown mutation {verb:?} (expected one of: {VERBS})")]
    UnknownVerb {
        /// The first word of the text.
        verb: String,
    },
    /// The argument is missing or lacks a separator (`/`, `=`).
    #[error("{argument:?} is not of the form {form}")]
    Malformed {
        /// The argument as given.
        argument: String,
        /// The expected form.
        form: &'static str,
    },
    /// `KIND` is not a kind of object.
    #[error("unknown kind {kind:?} (expected {form})")]
    UnknownKind {
        /// The kind as given.
        kind: String,
        /// The expected form.
        form: &'static str,
    },
    /// A name is empty.
    #[error("the name is empty (expected {form})")]
    EmptyName {
        /// The expected form.
        form: &'static str,
    },
    /// An MTU is not a number.
    #[error("{value:?} is not a number (expected {form})")]
    NotANumber {
        /// The value as given.
        value: String,
        /// The expected form.
        form: &'static str,
    },
    /// An MTU outside what the verb accepts.
    #[error("{value} is outside {range} (expected {form})")]
    OutOfRange {
        /// The value.
        value: u32,
        /// The accepted range.
        range: &'static str,
        /// The expected form.
        form: &'static str,
    },
    /// `enable`/`disable` of a kind that has no `enabled`.
    #[error(
        "only SitePeering, SiteGatewayPoolAssignment and GatewayPoolPeering can be enabled or disabled, not {kind} (expected {form})"
    )]
    NotSwitchable {
        /// The kind given.
        kind: Kind,
        /// The expected form.
        form: &'static str,
    },
    /// A member that is neither a Site nor a GatewayPool.
    #[error("a member is a Site or a GatewayPool, not {kind} (expected {form})")]
    NotAMemberKind {
        /// The kind given.
        kind: Kind,
        /// The expected form.
        form: &'static str,
    },
}

impl FromStr for Mutation {
    type Err = ParseMutationError;

    /// Reads a mutation's text (the table of [`Mutation`]): what [`Display`](fmt::Display)
    /// writes, with kinds in any letter case. Costs a parse of the text.
    ///
    /// ```
    /// use mtu_solver::{Mutation, ParseMutationError};
    /// let m: Mutation = "path wa=wb:1380".parse()?;
    /// assert_eq!(m, Mutation::PathMtu { node: "wa".into(), peer: "wb".into(), mtu: Some(1380) });
    /// let e = "set sitepeering/ab".parse::<Mutation>().expect_err("no MTU");
    /// assert!(matches!(e, ParseMutationError::Malformed { form: "set KIND/NAME=MTU", .. }), "{e}");
    /// # Ok::<(), ParseMutationError>(())
    /// ```
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (verb, argument) = match s.split_once(char::is_whitespace) {
            Some((v, a)) => (v, a.trim_start()),
            None => (s, ""),
        };
        let form = form_of(verb).ok_or_else(|| ParseMutationError::UnknownVerb {
            verb: verb.to_string(),
        })?;
        let arg = Argument {
            text: argument,
            form,
        };
        if argument.is_empty() {
            return Err(arg.malformed());
        }
        match verb {
            "set" => {
                let (object, value) = arg.split_eq()?;
                let (kind, name) = arg.kind_name(object)?;
                let mtu = value.parse().map_err(|_| arg.not_a_number(value))?;
                Ok(Mutation::SetCap { kind, name, mtu })
            }
            "clear" => {
                let (kind, name) = arg.kind_name(argument)?;
                Ok(Mutation::ClearCap { kind, name })
            }
            "enable" | "disable" => {
                let (kind, name) = arg.kind_name(argument)?;
                if !matches!(
                    kind,
                    Kind::SitePeering | Kind::SiteGatewayPoolAssignment | Kind::GatewayPoolPeering
                ) {
                    return Err(ParseMutationError::NotSwitchable { kind, form });
                }
                let enabled = verb == "enable";
                Ok(Mutation::SetEnabled {
                    kind,
                    name,
                    enabled,
                })
            }
            "add-member" | "remove-member" => arg.member(verb == "add-member"),
            "demote" => Ok(Mutation::Demote {
                node: argument.to_string(),
            }),
            "promote" => {
                let (node, pool) = arg.split_eq()?;
                Ok(Mutation::Promote {
                    node: arg.name(node)?,
                    pool: arg.name(pool)?,
                })
            }
            "underlay" => {
                let (node, value) = arg.split_eq()?;
                let mtu = arg.mtu(value, |v| (576..=65535).contains(&v), "576..65535")?;
                Ok(Mutation::Underlay {
                    node: arg.name(node)?,
                    mtu,
                })
            }
            "path" => arg.path_mtu(),
            "agent-mtu" => {
                let ok = |v: u32| v == 0 || (576..=9000).contains(&v);
                let mtu = arg.mtu(argument, ok, "576..9000 (0 = none)")?;
                Ok(Mutation::AgentMtu(mtu))
            }
            _ => Err(ParseMutationError::UnknownVerb {
                verb: verb.to_string(),
            }),
        }
    }
}

/// The form a verb expects (None: not a verb).
fn form_of(verb: &str) -> Option<&'static str> {
    Some(match verb {
        "set" => SET,
        "clear" => CLEAR,
        "enable" => ENABLE,
        "disable" => DISABLE,
        "add-member" => ADD_MEMBER,
        "remove-member" => REMOVE_MEMBER,
        "demote" => DEMOTE,
        "promote" => PROMOTE,
        "underlay" => UNDERLAY,
        "agent-mtu" => AGENT_MTU,
        "path" => PATH,
        _ => return None,
    })
}

/// The argument of a verb, with the form its errors name.
struct Argument<'a> {
    text: &'a str,
    form: &'static str,
}

impl<'a> Argument<'a> {
    fn malformed(&self) -> ParseMutationError {
        ParseMutationError::Malformed {
            argument: self.text.to_string(),
            form: self.form,
        }
    }

    fn not_a_number(&self, value: &str) -> ParseMutationError {
        ParseMutationError::NotANumber {
            value: value.to_string(),
            form: self.form,
        }
    }

    /// `LEFT=RIGHT`, at the first `=`.
    fn split_eq(&self) -> Result<(&'a str, &'a str), ParseMutationError> {
        self.text.split_once('=').ok_or_else(|| self.malformed())
    }

    /// A non-empty name.
    fn name(&self, s: &str) -> Result<String, ParseMutationError> {
        if s.is_empty() {
            return Err(ParseMutationError::EmptyName { form: self.form });
        }
        Ok(s.to_string())
    }

    /// `KIND/NAME`, the kind case-insensitive.
    fn kind_name(&self, s: &str) -> Result<(Kind, String), ParseMutationError> {
        let (k, n) = s.split_once('/').ok_or_else(|| self.malformed())?;
        let kind = Kind::parse_ci(k).ok_or_else(|| ParseMutationError::UnknownKind {
            kind: k.to_string(),
            form: self.form,
        })?;
        Ok((kind, self.name(n)?))
    }

    /// `KIND/NAME=KIND/MEMBER`, the member a Site or a GatewayPool.
    fn member(&self, add: bool) -> Result<Mutation, ParseMutationError> {
        let (object, member) = self.split_eq()?;
        let (kind, name) = self.kind_name(object)?;
        let (member_kind, member) = self.kind_name(member)?;
        if !matches!(member_kind, Kind::Site | Kind::GatewayPool) {
            return Err(ParseMutationError::NotAMemberKind {
                kind: member_kind,
                form: self.form,
            });
        }
        Ok(Mutation::Member {
            kind,
            name,
            member_kind,
            member,
            add,
        })
    }

    /// `NODE=PEER:MTU`, MTU in 576..65535 or 0 (the entry cleared).
    fn path_mtu(&self) -> Result<Mutation, ParseMutationError> {
        let (node, rest) = self.split_eq()?;
        let (peer, value) = rest.split_once(':').ok_or_else(|| self.malformed())?;
        let mtu = self.mtu(
            value,
            |v| v == 0 || (576..=65535).contains(&v),
            "576..65535 (0 clears the entry)",
        )?;
        Ok(Mutation::PathMtu {
            node: self.name(node)?,
            peer: self.name(peer)?,
            mtu: (mtu > 0).then_some(mtu),
        })
    }

    /// An MTU that `accepts` (described by `range`).
    fn mtu(
        &self,
        s: &str,
        accepts: impl Fn(u32) -> bool,
        range: &'static str,
    ) -> Result<u32, ParseMutationError> {
        let value: u32 = s.parse().map_err(|_| self.not_a_number(s))?;
        if !accepts(value) {
            return Err(ParseMutationError::OutOfRange {
                value,
                range,
                form: self.form,
            });
        }
        Ok(value)
    }
}

impl fmt::Display for Mutation {
    /// The text [`FromStr`] reads back, kinds as manifests spell them. Costs writing the text.
    ///
    /// ```
    /// use mtu_solver::{Kind, Mutation};
    /// let off = Mutation::SetEnabled { kind: Kind::SitePeering, name: "ab".into(), enabled: false };
    /// assert_eq!(off.to_string(), "disable SitePeering/ab");
    /// assert_eq!(off.to_string().parse::<Mutation>(), Ok(off));
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mutation::SetCap { kind, name, mtu } => write!(f, "set {kind}/{name}={mtu}"),
            Mutation::ClearCap { kind, name } => write!(f, "clear {kind}/{name}"),
            Mutation::SetEnabled {
                kind,
                name,
                enabled,
            } => {
                let verb = if *enabled { "enable" } else { "disable" };
                write!(f, "{verb} {kind}/{name}")
            }
            Mutation::Member {
                kind,
                name,
                member_kind: of,
                member,
                add,
            } => {
                let verb = if *add { "add-member" } else { "remove-member" };
                write!(f, "{verb} {kind}/{name}={of}/{member}")
            }
            Mutation::Demote { node } => write!(f, "demote {node}"),
            Mutation::Promote { node, pool } => write!(f, "promote {node}={pool}"),
            Mutation::Underlay { node, mtu } => write!(f, "underlay {node}={mtu}"),
            Mutation::AgentMtu(mtu) => write!(f, "agent-mtu {mtu}"),
            Mutation::PathMtu { node, peer, mtu } => {
                write!(f, "path {node}={peer}:{}", mtu.unwrap_or(0))
            }
        }
    }
}

impl Serialize for Mutation {
    /// As its text (`set SitePeering/ab=1400`).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Mutation {
    /// From its text, as [`std::str::FromStr`] reads it.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Mutation, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<Mutation> {
        vec![
            Mutation::SetCap {
                kind: Kind::SitePeering,
                name: "ab".into(),
                mtu: 1400,
            },
            Mutation::SetCap {
                kind: Kind::GatewayPool,
                name: "p".into(),
                mtu: 0,
            },
            Mutation::ClearCap {
                kind: Kind::Site,
                name: "a".into(),
            },
            Mutation::SetEnabled {
                kind: Kind::SiteGatewayPoolAssignment,
                name: "spokes".into(),
                enabled: true,
            },
            Mutation::SetEnabled {
                kind: Kind::GatewayPoolPeering,
                name: "pp".into(),
                enabled: false,
            },
            Mutation::Member {
                kind: Kind::SitePeering,
                name: "ab".into(),
                member_kind: Kind::Site,
                member: "c".into(),
                add: true,
            },
            Mutation::Member {
                kind: Kind::GatewayPoolPeering,
                name: "pp".into(),
                member_kind: Kind::GatewayPool,
                member: "q".into(),
                add: false,
            },
            Mutation::Demote { node: "g1".into() },
            Mutation::Promote {
                node: "w1".into(),
                pool: "PH".into(),
            },
            Mutation::Underlay {
                node: "w1".into(),
                mtu: 9000,
            },
            Mutation::AgentMtu(1400),
            Mutation::AgentMtu(0),
            Mutation::PathMtu {
                node: "a".into(),
                peer: "b".into(),
                mtu: Some(1400),
            },
            Mutation::PathMtu {
                node: "a".into(),
                peer: "b".into(),
                mtu: None,
            },
        ]
    }

    #[test]
    fn every_kind_round_trips() {
        for m in every_kind() {
            let text = m.to_string();
            assert_eq!(text.parse::<Mutation>(), Ok(m.clone()), "{text}");
            let value = serde_json::to_value(&m).unwrap();
            assert_eq!(value, serde_json::Value::String(text));
            assert_eq!(serde_json::from_value::<Mutation>(value).unwrap(), m);
        }
    }

    #[test]
    fn texts_read_as_written() {
        let cases = [
            ("set SitePeering/ab=1400", "set SitePeering/ab=1400"),
            ("  set   sitepeering/ab=99999 ", "set SitePeering/ab=99999"),
            ("clear gatewaypool/p", "clear GatewayPool/p"),
            ("disable SitePeering/ab", "disable SitePeering/ab"),
            (
                "add-member SiteGatewayPoolAssignment/x=Site/c",
                "add-member SiteGatewayPoolAssignment/x=Site/c",
            ),
            ("promote w1=PH", "promote w1=PH"),
            ("underlay w1=576", "underlay w1=576"),
            ("agent-mtu 0", "agent-mtu 0"),
        ];
        for (text, canonical) in cases {
            let m: Mutation = text.parse().unwrap();
            assert_eq!(m.to_string(), canonical);
        }
    }

    #[test]
    fn malformed_texts_are_refused_with_the_form() {
        use ParseMutationError as E;
        let cases: [(&str, E); 14] = [
            ("", E::UnknownVerb { verb: "".into() }),
            (
                "tweak a=1",
                E::UnknownVerb {
                    verb: "tweak".into(),
                },
            ),
            (
                "set",
                E::Malformed {
                    argument: "".into(),
                    form: SET,
                },
            ),
            (
                "set SitePeering/ab",
                E::Malformed {
                    argument: "SitePeering/ab".into(),
                    form: SET,
                },
            ),
            (
                "set ab=1400",
                E::Malformed {
                    argument: "ab=1400".into(),
                    form: SET,
                },
            ),
            (
                "set Peering/ab=1400",
                E::UnknownKind {
                    kind: "Peering".into(),
                    form: SET,
                },
            ),
            ("set SitePeering/=1400", E::EmptyName { form: SET }),
            (
                "set SitePeering/ab=big",
                E::NotANumber {
                    value: "big".into(),
                    form: SET,
                },
            ),
            (
                "enable Site/a",
                E::NotSwitchable {
                    kind: Kind::Site,
                    form: ENABLE,
                },
            ),
            (
                "remove-member SitePeering/ab=Node/n",
                E::NotAMemberKind {
                    kind: Kind::Node,
                    form: REMOVE_MEMBER,
                },
            ),
            (
                "promote w1",
                E::Malformed {
                    argument: "w1".into(),
                    form: PROMOTE,
                },
            ),
            ("promote =PH", E::EmptyName { form: PROMOTE }),
            (
                "underlay w1=100",
                E::OutOfRange {
                    value: 100,
                    range: "576..65535",
                    form: UNDERLAY,
                },
            ),
            (
                "agent-mtu 9001",
                E::OutOfRange {
                    value: 9001,
                    range: "576..9000 (0 = none)",
                    form: AGENT_MTU,
                },
            ),
        ];
        for (text, want) in cases {
            assert_eq!(text.parse::<Mutation>(), Err(want), "{text}");
        }
    }

    #[test]
    fn errors_name_the_problem_and_the_form() {
        let e = "set SitePeering/ab=big".parse::<Mutation>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"big\" is not a number (expected set KIND/NAME=MTU)"
        );
        let e = "frob x".parse::<Mutation>().unwrap_err();
        assert!(e.to_string().contains("set, clear, enable"), "{e}");
    }
}

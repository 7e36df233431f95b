//! Kubernetes label selectors, in kubectl's syntax (`kubectl get nodes -l ...`): `k=v`, `k==v`,
//! `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (the label exists), `!k` (it does not); a comma
//! joins requirements that must all hold. The empty selector selects everything.
//!
//! As in Kubernetes, `k!=v` and `k notin (...)` also hold when the label is absent. Keys and
//! values are checked as Kubernetes checks label keys and values: a key is a name of at most 63
//! characters (letters, digits, `-`, `_`, `.`, beginning and ending with a letter or digit),
//! optionally after a DNS-subdomain prefix and `/`; a value is such a name, or empty.

use std::fmt;

/// Why a label selector cannot be read; `column` counts characters from 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LabelSelectorError {
    /// A token that does not belong where it stands.
    #[error("label selector {selector:?}, column {column}: {expected}, found {found}")]
    Syntax {
        /// The selector as written.
        selector: String,
        /// Where the offending token starts.
        column: usize,
        /// What the grammar allows there.
        expected: &'static str,
        /// What was there.
        found: String,
    },
    /// A key that is not a valid label key.
    #[error(
        "label selector {selector:?}, column {column}: {key:?} is not a valid label key: {why}"
    )]
    Key {
        /// The selector as written.
        selector: String,
        /// Where the key starts.
        column: usize,
        /// The key.
        key: String,
        /// The rule it breaks.
        why: &'static str,
    },
    /// A value that is not a valid label value.
    #[error(
        "label selector {selector:?}, column {column}: {value:?} is not a valid label value: {why}"
    )]
    Value {
        /// The selector as written.
        selector: String,
        /// Where the value starts.
        column: usize,
        /// The value.
        value: String,
        /// The rule it breaks.
        why: &'static str,
    },
}

/// What one requirement asks of a label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operator {
    /// The label exists with one of these values (`k=v`, `k==v`, `k in (...)`).
    In(Vec<String>),
    /// The label is absent or has none of these values (`k!=v`, `k notin (...)`).
    NotIn(Vec<String>),
    /// The label exists (`k`).
    Exists,
    /// The label does not exist (`!k`).
    DoesNotExist,
}

/// One requirement: a key and what its value must be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The condition on its value.
    pub op: Operator,
}

impl Requirement {
    /// Whether a label set whose value of `key` is `value` (None: absent) meets it.
    fn holds(&self, value: Option<&str>) -> bool {
        match (&self.op, value) {
            (Operator::In(set), Some(v)) => set.iter().any(|s| s == v),
            (Operator::In(_), None) => false,
            (Operator::NotIn(set), Some(v)) => !set.iter().any(|s| s == v),
            (Operator::NotIn(_), None) => true,
            (Operator::Exists, v) => v.is_some(),
            (Operator::DoesNotExist, v) => v.is_none(),
        }
    }
}

/// A parsed label selector: requirements that must all hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// The requirements, in the order written.
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Reads a selector in kubectl's syntax.
    pub fn parse(text: &str) -> Result<LabelSelector, LabelSelectorError> {
        Parser::new(text).selector()
    }

    /// Whether labels `labels` (key and value pairs) meet every requirement.
    pub fn matches<K: AsRef<str>, V: AsRef<str>>(&self, labels: &[(K, V)]) -> bool {
        self.requirements.iter().all(|r| {
            let value = labels
                .iter()
                .find(|(k, _)| k.as_ref() == r.key)
                .map(|(_, v)| v.as_ref());
            r.holds(value)
        })
    }

    /// Whether the selector selects everything (no requirement).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

/// The selector in kubectl's syntax, sets as written.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let k = &r.key;
            match &r.op {
                Operator::In(set) if set.len() == 1 => write!(f, "{k}={}", set.join(""))?,
                Operator::NotIn(set) if set.len() == 1 => write!(f, "{k}!={}", set.join(""))?,
                Operator::In(set) => write!(f, "{k} in ({})", set.join(","))?,
                Operator::NotIn(set) => write!(f, "{k} notin ({})", set.join(","))?,
                Operator::Exists => f.write_str(k)?,
                Operator::DoesNotExist => write!(f, "!{k}")?,
            }
        }
        Ok(())
    }
}

/// A token of the selector language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok<'a> {
    /// A key, a value, or `in` / `notin`.
    Word(&'a str),
    Comma,
    Open,
    Close,
    /// `=` or `==`.
    Equals,
    NotEquals,
    Not,
    End,
}

impl fmt::Display for Tok<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Word(w) => write!(f, "{w:?}"),
            Tok::Comma => f.write_str("\",\""),
            Tok::Open => f.write_str("\"(\""),
            Tok::Close => f.write_str("\")\""),
            Tok::Equals => f.write_str("\"=\""),
            Tok::NotEquals => f.write_str("\"!=\""),
            Tok::Not => f.write_str("\"!\""),
            Tok::End => f.write_str("the end"),
        }
    }
}

/// Characters that end a word.
fn special(c: char) -> bool {
    c.is_whitespace() || matches!(c, ',' | '(' | ')' | '=' | '!')
}

/// Splits `text` into tokens, each with its column (characters from 1); the last is `End`.
fn lex(text: &str) -> Vec<(usize, Tok<'_>)> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().enumerate().peekable();
    while let Some((col, (at, c))) = chars.next() {
        let column = col.saturating_add(1);
        let tok = match c {
            c if c.is_whitespace() => continue,
            ',' => Tok::Comma,
            '(' => Tok::Open,
            ')' => Tok::Close,
            '=' => {
                chars.next_if(|(_, (_, c))| *c == '=');
                Tok::Equals
            }
            '!' => match chars.next_if(|(_, (_, c))| *c == '=') {
                Some(_) => Tok::NotEquals,
                None => Tok::Not,
            },
            _ => {
                let mut end = at.saturating_add(c.len_utf8());
                while let Some((_, (i, c))) = chars.next_if(|(_, (_, c))| !special(*c)) {
                    end = i.saturating_add(c.len_utf8());
                }
                Tok::Word(text.get(at..end).unwrap_or_default())
            }
        };
        out.push((column, tok));
    }
    out.push((text.chars().count().saturating_add(1), Tok::End));
    out
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(usize, Tok<'a>)>,
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser {
            text,
            toks: lex(text),
            at: 0,
        }
    }

    fn peek(&self) -> (usize, Tok<'a>) {
        self.toks
            .get(self.at)
            .copied()
            .unwrap_or((self.text.chars().count().saturating_add(1), Tok::End))
    }

    fn next(&mut self) -> (usize, Tok<'a>) {
        let t = self.peek();
        self.at = self.at.saturating_add(1);
        t
    }

    fn syntax(
        &self,
        (column, found): (usize, Tok<'_>),
        expected: &'static str,
    ) -> LabelSelectorError {
        LabelSelectorError::Syntax {
            selector: self.text.to_string(),
            column,
            expected,
            found: found.to_string(),
        }
    }

    /// requirement ("," requirement)*, or nothing at all.
    fn selector(mut self) -> Result<LabelSelector, LabelSelectorError> {
        let mut requirements = Vec::new();
        if self.peek().1 == Tok::End {
            return Ok(LabelSelector { requirements });
        }
        loop {
            requirements.push(self.requirement()?);
            match self.next() {
                (_, Tok::End) => return Ok(LabelSelector { requirements }),
                (_, Tok::Comma) => {}
                other => return Err(self.syntax(other, "expected \",\" or the end")),
            }
        }
    }

    /// `!key`, `key`, `key op value`, `key in|notin (values)`.
    fn requirement(&mut self) -> Result<Requirement, LabelSelectorError> {
        let key_expected = "expected a label key or \"!\"";
        let (column, tok) = self.next();
        let (negated, (column, tok)) = match tok {
            Tok::Not => (true, self.next()),
            _ => (false, (column, tok)),
        };
        let key = match tok {
            Tok::Word(w) => self.key(column, w)?,
            _ => return Err(self.syntax((column, tok), key_expected)),
        };
        if negated {
            return Ok(Requirement {
                key,
                op: Operator::DoesNotExist,
            });
        }
        let op = match self.peek().1 {
            Tok::Comma | Tok::End => Operator::Exists,
            Tok::Equals => {
                self.next();
                Operator::In(vec![self.value()?])
            }
            Tok::NotEquals => {
                self.next();
                Operator::NotIn(vec![self.value()?])
            }
            Tok::Word("in") => {
                self.next();
                Operator::In(self.set()?)
            }
            Tok::Word("notin") => {
                self.next();
                Operator::NotIn(self.set()?)
            }
            _ => {
                return Err(self.syntax(
                    self.peek(),
                    "expected \"=\", \"==\", \"!=\", \"in\", \"notin\", \",\" or the end",
                ));
            }
        };
        Ok(Requirement { key, op })
    }

    /// A value after `=`, `==` or `!=`, or in a set: empty when none is written.
    fn value(&mut self) -> Result<String, LabelSelectorError> {
        match self.peek() {
            (column, Tok::Word(w)) => {
                self.next();
                self.checked_value(column, w)
            }
            (_, Tok::Comma | Tok::Close | Tok::End) => Ok(String::new()),
            other => Err(self.syntax(other, "expected a label value")),
        }
    }

    /// `(v1, v2, ...)`, at least one value.
    fn set(&mut self) -> Result<Vec<String>, LabelSelectorError> {
        match self.next() {
            (_, Tok::Open) => {}
            other => return Err(self.syntax(other, "expected \"(\"")),
        }
        if let (column, Tok::Close) = self.peek() {
            return Err(self.syntax((column, Tok::Close), "expected at least one value"));
        }
        let mut values = Vec::new();
        loop {
            values.push(self.value()?);
            match self.next() {
                (_, Tok::Comma) => {}
                (_, Tok::Close) => return Ok(values),
                other => return Err(self.syntax(other, "expected \",\" or \")\"")),
            }
        }
    }

    fn key(&self, column: usize, key: &str) -> Result<String, LabelSelectorError> {
        check_key(key)
            .map(|()| key.to_string())
            .map_err(|why| LabelSelectorError::Key {
                selector: self.text.to_string(),
                column,
                key: key.to_string(),
                why,
            })
    }

    fn checked_value(&self, column: usize, value: &str) -> Result<String, LabelSelectorError> {
        check_name(value)
            .map(|()| value.to_string())
            .map_err(|why| LabelSelectorError::Value {
                selector: self.text.to_string(),
                column,
                value: value.to_string(),
                why,
            })
    }
}

/// A label key: `[prefix/]name`, the prefix a DNS subdomain.
fn check_key(key: &str) -> Result<(), &'static str> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            check_prefix(prefix)?;
            if name.is_empty() {
                return Err("the name after \"/\" is empty");
            }
            name
        }
        None => key,
    };
    check_name(name)
}

/// A DNS subdomain: at most 253 characters, lowercase letters, digits, `-` and `.`, beginning
/// and ending with a letter or digit.
fn check_prefix(prefix: &str) -> Result<(), &'static str> {
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if prefix.len() > 253 {
        Err("the prefix is longer than 253 characters")
    } else if !prefix
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    {
        Err("the prefix may hold only lowercase letters, digits, \"-\" and \".\"")
    } else if !ends_ok(prefix.chars().next()) || !ends_ok(prefix.chars().last()) {
        Err("the prefix must begin and end with a lowercase letter or digit")
    } else {
        Ok(())
    }
}

/// A label name or value: empty, or at most 63 characters, letters, digits, `-`, `_` and `.`,
/// beginning and ending with a letter or digit.
fn check_name(name: &str) -> Result<(), &'static str> {
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if name.is_empty() {
        Ok(())
    } else if name.len() > 63 {
        Err("longer than 63 characters")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Err("only letters, digits, \"-\", \"_\" and \".\" are allowed")
    } else if !ends_ok(name.chars().next()) || !ends_ok(name.chars().last()) {
        Err("must begin and end with a letter or digit")
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABELS: &[(&str, &str)] = &[
        ("net.unbounded-cloud.io/site", "hub"),
        ("pool", "pa"),
        ("zone", "z1"),
        ("empty", ""),
    ];

    /// Selector text, whether it selects `LABELS`.
    const MATCHES: &[(&str, bool)] = &[
        ("", true),
        ("pool=pa", true),
        ("pool==pa", true),
        ("pool=pb", false),
        ("pool!=pb", true),
        ("pool!=pa", false),
        ("missing!=x", true),
        ("missing=x", false),
        ("pool in (pa,pb)", true),
        ("pool in (pb, pc)", false),
        ("pool notin (pb,pc)", true),
        ("pool notin (pa)", false),
        ("missing notin (a)", true),
        ("missing in (a)", false),
        ("pool", true),
        ("missing", false),
        ("!missing", true),
        ("!pool", false),
        ("net.unbounded-cloud.io/site=hub", true),
        ("pool=pa,zone=z1", true),
        ("pool=pa,zone=z2", false),
        ("pool = pa , zone in ( z1 , z2 ) , !gpu", true),
        ("empty=", true),
        ("empty", true),
        ("zone=", false),
        ("zone in (z2,)", false),
        ("empty in (z2,)", true),
    ];

    #[test]
    fn selectors_select_as_kubectl_does() {
        for (text, want) in MATCHES {
            let s = LabelSelector::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(s.matches(LABELS), *want, "{text:?} parsed as {s:?}");
        }
    }

    /// Selector text, column and words the error names.
    const BAD: &[(&str, usize, &str)] = &[
        ("pool=pa,", 9, "expected a label key"),
        (",pool", 1, "expected a label key"),
        ("pool in pa", 9, "expected \"(\""),
        ("pool in ()", 10, "at least one value"),
        ("pool in (pa", 12, "expected \",\" or \")\""),
        ("pool notin (a b)", 15, "expected \",\" or \")\""),
        ("pool pa", 6, "expected \"=\""),
        ("pool=pa=pb", 8, "expected \",\" or the end"),
        ("!", 2, "expected a label key"),
        ("!pool=pa", 6, "expected \",\" or the end"),
        ("pool=(pa)", 6, "expected a label value"),
        ("-pool=pa", 1, "not a valid label key"),
        ("Example.com/pool", 1, "prefix may hold only lowercase"),
        ("example.com/", 1, "name after \"/\" is empty"),
        ("pool=pa$", 6, "not a valid label value"),
        ("pool in (pa,-pb)", 13, "not a valid label value"),
        ("pool>3", 1, "not a valid label key"),
    ];

    #[test]
    fn bad_selectors_are_refused_naming_where() {
        for (text, column, words) in BAD {
            let e = LabelSelector::parse(text).expect_err(text);
            let shown = e.to_string();
            assert!(shown.contains(words), "{text:?}: {shown}");
            assert!(
                shown.contains(&format!("column {column}:")),
                "{text:?}: {shown}"
            );
            assert!(shown.contains(&format!("{text:?}")), "{text:?}: {shown}");
        }
    }

    #[test]
    fn display_writes_what_parses_back_the_same() {
        for text in ["pool=pa", "pool!=pa", "a in (x,y),!b,c", "k notin (v)", ""] {
            let s = LabelSelector::parse(text).expect(text);
            let again = LabelSelector::parse(&s.to_string()).expect("reparse");
            assert_eq!(s, again, "{text:?} shown as {s}");
        }
        assert_eq!(
            LabelSelector::parse("a == x , b in ( y , z )").map(|s| s.to_string()),
            Ok("a=x,b in (y,z)".to_string())
        );
    }
}

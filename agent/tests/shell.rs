//! Completions and manual pages as an operator's shell meets them: the bash script is loaded into
//! bash and asked to complete every subcommand's options and the values of the options that take
//! a fixed set; the zsh and fish scripts are loaded into those shells (fish also completes a
//! value); every subcommand has a manual page naming every one of its options.
//!
//! zsh and fish are not on every machine: without them those two checks say so and pass, except in
//! CI (`CI=true`), which installs both and where a missing shell fails the test.

use clap::CommandFactory;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_unbounded-mtu");

fn output_of(args: &[&str]) -> String {
    let o = Command::new(BIN)
        .args(args)
        .output()
        .expect("run the binary");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8")
}

fn script(shell: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("unbounded-mtu-shell-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(format!("completion.{shell}"));
    std::fs::write(&path, output_of(&["completion", shell])).expect("write");
    path
}

/// Whether `shell` can be run; in CI a missing shell is a failure, elsewhere a skip said aloud.
fn have(shell: &str) -> bool {
    let found = Command::new(shell)
        .arg("-c")
        .arg("true")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{shell} is not installed: CI installs it (.ci/run), and the completion test needs it"
        );
        eprintln!("{shell} is not installed here: its completion script is not checked");
    }
    found
}

/// What bash completes for `words` (the last one being completed) with the script loaded: the
/// function `complete -p unbounded-mtu` names, called as bash calls it.
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len().saturating_sub(1);
    let cur = words.last().copied().unwrap_or("");
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let program = format!(
        r#"source '{}'
spec=$(complete -p unbounded-mtu) || exit 3
fn=$(sed -n 's/.*-F \([^ ]*\).*/\1/p' <<<"$spec")
COMP_WORDS=({})
COMP_CWORD={cword}
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
"$fn" unbounded-mtu '{cur}' '{prev}'
printf '%s\n' "${{COMPREPLY[@]}}""#,
        script.display(),
        quoted.join(" "),
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(&program)
        .output()
        .expect("bash");
    assert!(
        o.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The long options of subcommand `name` (`--help` and `--version` included).
fn long_options(name: &str) -> Vec<String> {
    let mut cmd = unbounded_mtu::cli::Cli::command();
    cmd.build();
    let sub = cmd.find_subcommand(name).expect("subcommand");
    sub.get_arguments()
        .filter_map(|a| a.get_long())
        .map(|l| format!("--{l}"))
        .collect()
}

fn subcommands() -> Vec<String> {
    unbounded_mtu::cli::Cli::command()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect()
}

#[test]
fn bash_completes_every_subcommands_options_and_their_values() {
    let script = script("bash");
    let top = bash_complete(&script, &["unbounded-mtu", ""]);
    for sub in subcommands() {
        assert!(top.contains(&sub), "top level lacks {sub}: {top:?}");
        let offered = bash_complete(&script, &["unbounded-mtu", &sub, "--"]);
        for option in long_options(&sub) {
            assert!(
                offered.contains(&option),
                "unbounded-mtu {sub} --<TAB> lacks {option}: {offered:?}"
            );
        }
    }
    for (words, want) in [
        (
            &["unbounded-mtu", "resolve", "-o", ""][..],
            &["json", "table", "wide", "yaml"][..],
        ),
        (
            &["unbounded-mtu", "graph", "--format", ""][..],
            &["dot", "json", "svg", "yaml"][..],
        ),
        (
            &["unbounded-mtu", "graph", "-o", ""][..],
            &["dot", "json", "svg", "yaml"][..],
        ),
        (
            &["unbounded-mtu", "explain", "--fail-on", ""][..],
            &["error", "none", "warning"][..],
        ),
        (
            &["unbounded-mtu", "what-if", "--tunnel-ip-family", ""][..],
            &["IPv4", "IPv6"][..],
        ),
        (
            &["unbounded-mtu", "completion", ""][..],
            &["bash", "fish", "zsh"][..],
        ),
    ] {
        let mut got = bash_complete(&script, words);
        got.sort();
        got.retain(|w| !w.starts_with('-'));
        assert_eq!(got, want, "{words:?}");
    }
    let pages = bash_complete(&script, &["unbounded-mtu", "man", ""]);
    for page in ["resolve", "what-if", "probe"] {
        assert!(pages.iter().any(|p| p == page), "man <TAB>: {pages:?}");
    }
}

#[test]
fn the_zsh_script_loads_and_registers_its_function() {
    if !have("zsh") {
        return;
    }
    let script = script("zsh");
    let o = Command::new("zsh")
        .arg("-f")
        .arg("-c")
        .arg(format!(
            "autoload -U compinit && compinit -u -D && source '{}' && print -r -- \"${{_comps[unbounded-mtu]}}\"",
            script.display()
        ))
        .output()
        .expect("zsh");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && stderr.is_empty(), "zsh: {stderr}");
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "_unbounded-mtu");
}

#[test]
fn the_fish_script_loads_and_completes() {
    if !have("fish") {
        return;
    }
    let script = script("fish");
    let o = Command::new("fish")
        .arg("--no-config")
        .arg("-c")
        .arg(format!(
            "source '{}'; and complete -C 'unbounded-mtu graph --format '",
            script.display()
        ))
        .output()
        .expect("fish");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && stderr.is_empty(), "fish: {stderr}");
    let values: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect();
    assert_eq!(values, ["dot", "json", "svg", "yaml"]);
}

/// Every subcommand has a page of its own listing every option, in ASCII; the NAME line does not
/// repeat the name; `man --out-dir` writes the whole set.
#[test]
fn every_subcommand_has_a_manual_page_with_every_option() {
    let main = output_of(&["man"]);
    let name_line = main
        .lines()
        .skip_while(|l| *l != ".SH NAME")
        .nth(1)
        .unwrap_or("");
    assert!(
        name_line.starts_with("unbounded\\-mtu \\- ")
            && name_line.matches("unbounded").count() == 1,
        "{name_line}"
    );
    for sub in subcommands() {
        let page = output_of(&["man", &sub]);
        let title = format!(".TH unbounded-mtu-{sub} 1");
        assert!(page.contains(&title), "man {sub} lacks {title}");
        // groff warns on input outside ASCII (CI's check of the pages fails on a warning):
        // help texts write `->`, not an arrow.
        let wide = page.lines().find(|l| !l.is_ascii());
        assert!(wide.is_none(), "man {sub}: a line groff warns on: {wide:?}");
        for option in long_options(&sub) {
            let roff = option.replace('-', "\\-");
            assert!(page.contains(&roff), "man {sub} lacks {option}");
        }
    }
    let dir = std::env::temp_dir().join(format!("unbounded-mtu-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let listed = output_of(&["man", "--out-dir", &dir.display().to_string()]);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("the pages")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut want: Vec<String> = subcommands()
        .iter()
        .map(|s| format!("unbounded-mtu-{s}.1"))
        .chain(["unbounded-mtu.1".to_string()])
        .collect();
    want.sort();
    assert_eq!(files, want);
    assert_eq!(listed.lines().count(), want.len(), "{listed}");
    let _ = std::fs::remove_dir_all(&dir);
}

//! Bakes the commit and the build date into the binary (`unbounded-mtu --version`).
//!
//! `UNBOUNDED_MTU_COMMIT` and `UNBOUNDED_MTU_BUILD_DATE`, when set (an image build passes them,
//! having no git checkout), win; otherwise the commit comes from `git` and the date from
//! `SOURCE_DATE_EPOCH` (reproducible builds) or the clock. Without either: `unknown`.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// `YYYY-MM-DD` of a Unix time (civil-from-days, proleptic Gregorian).
fn date_of(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn main() {
    for var in [
        "UNBOUNDED_MTU_COMMIT",
        "UNBOUNDED_MTU_BUILD_DATE",
        "SOURCE_DATE_EPOCH",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // A new commit re-runs this script (HEAD moves, or the branch it names does).
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{r}");
        }
    }
    let commit = std::env::var("UNBOUNDED_MTU_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    let date = std::env::var("UNBOUNDED_MTU_BUILD_DATE")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            let secs = match std::env::var("SOURCE_DATE_EPOCH") {
                Ok(v) => v.parse().ok()?,
                Err(_) => std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()?
                    .as_secs(),
            };
            Some(date_of(secs))
        })
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=UNBOUNDED_MTU_COMMIT={commit}");
    println!("cargo:rustc-env=UNBOUNDED_MTU_BUILD_DATE={date}");
}

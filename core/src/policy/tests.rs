//! Scratch
use super::*;

#[test]
fn scratch() {
    for script in ["git add -A", "rm -rf /", "echo 'git add -A'", "bash -c 'rm -rf ~'", "git push -f", "ls", "rm -rf \"$DIR\"/*", "x=$(", "echo $'\\x72'"] {
        eprintln!("{script:?} => {:?}", check(script, &PolicyConfig::default()));
    }
}

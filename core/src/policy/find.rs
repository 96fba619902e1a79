//! `find`: what its actions may reach. The expression is parsed (`!`,
//! `-a`, `-o`, `,`, parentheses) and evaluated for a few kinds of entry: an
//! ordinary one, which filters such as `-name '*.o'` or `-newer F` leave
//! out but `-type f` or `! -name x` keep, a `.git` directory, and a file
//! inside one. Where an action is reached, its command is checked with
//! `{}` replaced by what it would get: a start point for an ordinary entry
//! (with everything under it: `find ~ -maxdepth 0 -exec rm -rf {} +` is
//! `rm -rf ~`), `.git` for a `.git` directory. `-delete` is a recursive
//! delete of each start point, unless `-maxdepth 1` keeps it to what is
//! directly inside.

use super::glob::{Glob, MatchOptions, ORDINARY_NAMES};
use super::words::Word;
use super::wrappers::substituted;

/// What one `find` command runs, deletes and prints.
#[derive(Debug, Default)]
pub(crate) struct Reach {
    /// Commands of `-exec`, `-execdir`, `-ok` and `-okdir`: as written,
    /// and with `{}` replaced by what it may be.
    pub(crate) commands: Vec<Vec<Word>>,
    /// Paths `-delete` may remove with everything under them.
    pub(crate) deleted: Vec<Word>,
    /// The start points, as shell source, when find prints them and
    /// everything under them (`find ~ | xargs rm -rf`).
    pub(crate) printed: Option<String>,
}

/// Parentheses and `!` nest; deeper than this, the rest is not read.
const MAX_DEPTH: usize = 64;

pub(crate) fn reach(args: &[Word]) -> Reach {
    let values: Vec<String> = args.iter().map(Word::loose_value).collect();
    // `-H`, `-L`, `-P`, `-D debugopts`, `-Olevel` come before the start
    // points.
    let mut index = 0;
    while let Some(value) = values.get(index) {
        match value.as_str() {
            "-H" | "-L" | "-P" => index += 1,
            "-D" => index += 2,
            level if level.starts_with("-O") => index += 1,
            _ => break,
        }
    }
    let first_expression = (index..values.len())
        .find(|&position| starts_expression(&values[position]))
        .unwrap_or(values.len());
    let mut starts: Vec<Word> = args[index.min(first_expression)..first_expression].to_vec();
    if starts.is_empty() {
        starts.push(Word::literal("."));
    }
    let mut parser = ExpressionParser {
        args: &args[first_expression..],
        values: &values[first_expression..],
        index: 0,
        depth: 0,
        actions: Vec::new(),
        max_depth: None,
    };
    let root = parser.list();
    let expression = Expression {
        root,
        actions: parser.actions,
    };
    let descends = parser.max_depth.is_none_or(|depth| depth >= 2);
    // `-maxdepth 1` deletes what is directly inside each start point, as
    // a non-recursive `rm -f DIR/*` would; `-maxdepth 0` the start point
    // itself, which is never meant for `~` or `.`.
    let deletes_starts = parser.max_depth != Some(1);
    let below_start = parser.max_depth != Some(0);
    expression.reach(&starts, descends, below_start, deletes_starts)
}

fn starts_expression(value: &str) -> bool {
    (value.starts_with('-') && value.len() > 1) || matches!(value, "(" | "!" | ")" | ",")
}

enum Node {
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Comma(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Test(Test),
    Action(usize),
}

enum Test {
    True,
    False,
    Name {
        glob: Glob,
        ignore_case: bool,
    },
    Path {
        glob: Glob,
        ignore_case: bool,
    },
    Type(String),
    /// A test we do not evaluate (`-newer F`, `-size +1M`, `-regex`):
    /// false for the entries we imagine, so it filters.
    Other,
}

enum Action {
    Exec(Vec<Word>),
    Delete,
    Print,
}

struct ExpressionParser<'a> {
    args: &'a [Word],
    values: &'a [String],
    index: usize,
    depth: usize,
    actions: Vec<Action>,
    max_depth: Option<u64>,
}

impl ExpressionParser<'_> {
    fn peek(&self) -> Option<&str> {
        self.values.get(self.index).map(String::as_str)
    }

    fn take(&mut self) -> Option<&str> {
        let value = self.values.get(self.index).map(String::as_str);
        self.index += 1;
        value
    }

    /// `A , B`
    fn list(&mut self) -> Option<Node> {
        let mut node = self.or()?;
        while self.peek() == Some(",") {
            self.index += 1;
            let Some(right) = self.or() else { break };
            node = Node::Comma(Box::new(node), Box::new(right));
        }
        Some(node)
    }

    /// `A -o B`
    fn or(&mut self) -> Option<Node> {
        let mut node = self.and()?;
        while matches!(self.peek(), Some("-o" | "-or")) {
            self.index += 1;
            let Some(right) = self.and() else { break };
            node = Node::Or(Box::new(node), Box::new(right));
        }
        Some(node)
    }

    /// `A -a B`, `A B`
    fn and(&mut self) -> Option<Node> {
        let mut node = self.not()?;
        loop {
            match self.peek() {
                Some("-a" | "-and") => self.index += 1,
                None | Some(")" | "-o" | "-or" | ",") => break,
                Some(_) => {}
            }
            let Some(right) = self.not() else { break };
            node = Node::And(Box::new(node), Box::new(right));
        }
        Some(node)
    }

    /// `! A`, `( A )`, or a primary.
    fn not(&mut self) -> Option<Node> {
        if self.depth >= MAX_DEPTH {
            self.index = self.values.len();
            return Some(Node::Test(Test::Other));
        }
        match self.peek()? {
            "!" | "-not" => {
                self.index += 1;
                self.depth += 1;
                let inner = self.not();
                self.depth -= 1;
                Some(Node::Not(Box::new(inner?)))
            }
            "(" => {
                self.index += 1;
                self.depth += 1;
                let inner = self.list();
                self.depth -= 1;
                if self.peek() == Some(")") {
                    self.index += 1;
                }
                inner
            }
            ")" => None,
            _ => Some(self.primary()),
        }
    }

    fn argument(&mut self) -> String {
        self.take().unwrap_or_default().to_owned()
    }

    fn primary(&mut self) -> Node {
        let name = self.argument();
        let test = match name.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let start = self.index;
                while !matches!(self.peek(), None | Some(";" | "+")) {
                    self.index += 1;
                }
                let command = self.args[start..self.index].to_vec();
                self.index += 1;
                return self.action(Action::Exec(command));
            }
            "-delete" => return self.action(Action::Delete),
            "-print" | "-print0" | "-ls" => return self.action(Action::Print),
            "-printf" => {
                self.argument();
                return self.action(Action::Print);
            }
            "-true"
            | "-prune"
            | "-quit"
            | "-depth"
            | "-d"
            | "-xdev"
            | "-mount"
            | "-noleaf"
            | "-follow"
            | "-ignore_readdir_race"
            | "-noignore_readdir_race"
            | "-daystart"
            | "-warn"
            | "-nowarn" => Test::True,
            "-false" => Test::False,
            "-maxdepth" => {
                self.max_depth = self.argument().parse().ok().or(Some(u64::MAX));
                Test::True
            }
            "-mindepth" | "-regextype" | "-fprint" | "-fprint0" | "-fls" | "-files0-from" => {
                self.argument();
                Test::True
            }
            "-fprintf" => {
                self.argument();
                self.argument();
                Test::True
            }
            "-name" | "-iname" => Test::Name {
                glob: Glob::parse_text(&self.argument(), false),
                ignore_case: name == "-iname",
            },
            "-path" | "-ipath" | "-wholename" | "-iwholename" => Test::Path {
                glob: Glob::parse_text(&self.argument(), false),
                ignore_case: name.starts_with("-i"),
            },
            "-type" | "-xtype" => Test::Type(self.argument()),
            "-empty" | "-readable" | "-writable" | "-executable" | "-nouser" | "-nogroup" => {
                Test::Other
            }
            other if other.starts_with('-') => {
                self.argument();
                Test::Other
            }
            _ => Test::Other,
        };
        Node::Test(test)
    }

    fn action(&mut self, action: Action) -> Node {
        self.actions.push(action);
        Node::Action(self.actions.len() - 1)
    }
}

/// An entry find may visit.
struct Probe {
    /// Any entry not picked out by a filter, the start points included.
    ordinary: bool,
    name: &'static str,
    path: &'static str,
    kind: char,
    /// What `{}` becomes for it; `None`: the start points.
    replacement: Option<&'static str>,
}

const ORDINARY: Probe = Probe {
    ordinary: true,
    name: "",
    path: "",
    kind: 'f',
    replacement: None,
};
const GIT_DIRECTORY: Probe = Probe {
    ordinary: false,
    name: ".git",
    path: "./repo/.git",
    kind: 'd',
    replacement: Some(".git"),
};
const GIT_FILE: Probe = Probe {
    ordinary: false,
    name: "HEAD",
    path: "./repo/.git/HEAD",
    kind: 'f',
    replacement: Some(".git/HEAD"),
};

/// Paths of every kind, for `-path` patterns that match everything.
const ORDINARY_PATHS: &[&str] = &["./a", "./src/main.rs", "./x.y", "./README.md"];

struct Expression {
    root: Option<Node>,
    actions: Vec<Action>,
}

impl Expression {
    fn reach(
        &self,
        starts: &[Word],
        descends: bool,
        below_start: bool,
        deletes_starts: bool,
    ) -> Reach {
        let mut reach = Reach::default();
        for action in &self.actions {
            if let Action::Exec(command) = action {
                reach.commands.push(command.clone());
            }
        }
        // A `.git` directory is at least one level down, a file in it two
        // (from a start point that is not itself under `.git`).
        let probes = [
            Some(&ORDINARY),
            below_start.then_some(&GIT_DIRECTORY),
            descends.then_some(&GIT_FILE),
        ];
        let mut ordinary_reached = Vec::new();
        for probe in probes.into_iter().flatten() {
            let mut reached = Vec::new();
            let matched = self
                .root
                .as_ref()
                .is_none_or(|root| evaluate(root, probe, &mut reached));
            if probe.ordinary {
                ordinary_reached.clone_from(&reached);
            } else {
                // An action every entry reaches is judged by the start
                // points (`find build -delete` also deletes `build/.git`,
                // as `rm -rf build` would); only one a filter picks `.git`
                // out for is judged by `.git`.
                reached.retain(|index| !ordinary_reached.contains(index));
            }
            let values: Vec<Word> = match probe.replacement {
                Some(path) => vec![Word::literal(path)],
                None => starts.to_vec(),
            };
            if self.actions.is_empty() && matched && probe.ordinary {
                reach.printed = Some(source(starts));
            }
            for index in reached {
                match &self.actions[index] {
                    Action::Exec(command) => {
                        let command = if probe.ordinary && descends {
                            recursive(command)
                        } else {
                            command.clone()
                        };
                        for value in &values {
                            reach.commands.push(substituted(&command, "{}", value));
                        }
                    }
                    Action::Delete if deletes_starts || !probe.ordinary => {
                        reach.deleted.extend(values.iter().cloned());
                    }
                    Action::Print if probe.ordinary => reach.printed = Some(source(starts)),
                    Action::Delete | Action::Print => {}
                }
            }
        }
        reach
    }
}

fn source(words: &[Word]) -> String {
    words
        .iter()
        .map(Word::to_source)
        .collect::<Vec<_>>()
        .join(" ")
}

/// An `rm` run on every entry under a start point deletes the start
/// point's tree as `rm -r` would: `-r` is added to it.
fn recursive(command: &[Word]) -> Vec<Word> {
    let mut command = command.to_vec();
    if let Some(position) = command
        .iter()
        .position(|word| word.command_name().as_deref() == Some("rm"))
    {
        command.insert(position + 1, Word::literal("-r"));
    }
    command
}

fn evaluate(node: &Node, probe: &Probe, reached: &mut Vec<usize>) -> bool {
    match node {
        Node::And(left, right) => evaluate(left, probe, reached) && evaluate(right, probe, reached),
        Node::Or(left, right) => evaluate(left, probe, reached) || evaluate(right, probe, reached),
        Node::Comma(left, right) => {
            evaluate(left, probe, reached);
            evaluate(right, probe, reached)
        }
        Node::Not(inner) => !evaluate(inner, probe, reached),
        Node::Action(index) => {
            reached.push(*index);
            true
        }
        Node::Test(test) => test_value(test, probe),
    }
}

fn test_value(test: &Test, probe: &Probe) -> bool {
    let options = |ignore_case| MatchOptions {
        explicit_leading_dot: false,
        ignore_case,
    };
    match test {
        Test::True => true,
        Test::False | Test::Other => false,
        Test::Name { glob, ignore_case } if probe.ordinary => {
            glob.matches_all(ORDINARY_NAMES, options(*ignore_case))
        }
        Test::Name { glob, ignore_case } => glob.matches(probe.name, options(*ignore_case)),
        Test::Path { glob, ignore_case } if probe.ordinary => {
            glob.matches_all(ORDINARY_PATHS, options(*ignore_case))
        }
        Test::Path { glob, ignore_case } => glob.matches(probe.path, options(*ignore_case)),
        Test::Type(_) if probe.ordinary => true,
        Test::Type(kinds) => kinds.contains(probe.kind),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Word> {
        text.split_whitespace().map(Word::literal).collect()
    }

    fn commands(text: &str) -> Vec<String> {
        reach(&words(text))
            .commands
            .iter()
            .map(|command| super::super::words::joined(command))
            .collect()
    }

    #[test]
    fn replaces_braces_with_the_start_points_when_an_ordinary_entry_reaches_the_action() {
        assert_eq!(
            commands("~ -maxdepth 0 -exec rm -rf {} +"),
            ["rm -rf {}", "rm -rf ~"]
        );
        assert_eq!(
            commands("a b -type f -exec rm {} ;"),
            ["rm {}", "rm -r a", "rm -r b"]
        );
        assert_eq!(
            commands(". -maxdepth 1 -exec rm -f {} +"),
            ["rm -f {}", "rm -f ."]
        );
    }

    #[test]
    fn a_filter_keeps_ordinary_entries_out_but_may_take_git() {
        assert_eq!(
            commands(". -name node_modules -exec rm -rf {} +"),
            ["rm -rf {}"]
        );
        assert_eq!(
            commands(". -name .git -exec rm -rf {} +"),
            ["rm -rf {}", "rm -rf .git"]
        );
        assert_eq!(
            commands(". ( -name a -o -name b ) -exec rm {} +"),
            ["rm {}"]
        );
        assert_eq!(
            commands(". -path */.git/* -exec rm {} +"),
            ["rm {}", "rm .git/HEAD"]
        );
        assert_eq!(commands(". ! -name x -exec rm {} +"), ["rm {}", "rm -r ."]);
    }

    #[test]
    fn deletes_start_points_unless_kept_to_one_level() {
        let deleted = |text: &str| {
            reach(&words(text))
                .deleted
                .iter()
                .map(Word::loose_value)
                .collect::<Vec<_>>()
        };
        assert_eq!(deleted("-type f -delete"), ["."]);
        assert_eq!(deleted("build -delete"), ["build"]);
        assert_eq!(deleted(". -name .git -delete"), [".git"]);
        assert_eq!(
            deleted(". -maxdepth 1 -type f -delete"),
            Vec::<String>::new()
        );
        assert_eq!(deleted("~ -maxdepth 0 -delete"), ["~"]);
        assert_eq!(deleted(". -name '*.pyc' -delete"), Vec::<String>::new());
        assert_eq!(deleted(". -empty -delete"), Vec::<String>::new());
    }

    #[test]
    fn prints_its_start_points_only_unfiltered() {
        assert_eq!(reach(&words("~ -maxdepth 0")).printed.as_deref(), Some("~"));
        assert_eq!(reach(&words(". -name *.o")).printed, None);
        assert_eq!(
            reach(&words(". -type d -print0")).printed.as_deref(),
            Some(".")
        );
    }

    #[test]
    fn survives_absurd_nesting() {
        let text = format!("x {} -delete", "! ( ".repeat(10_000));
        let _ = reach(&words(&text));
    }
}

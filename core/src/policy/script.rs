//! Parses a script and walks every place a command can execute: lists,
//! pipelines, compound commands, function bodies, substitutions in any word,
//! redirections and here-documents.

use brush_parser::Parser;
use brush_parser::ast::{
    AssignmentValue, Command, CommandPrefixOrSuffixItem, CompoundCommand, CompoundList,
    ExtendedTestExpr, IoFileRedirectTarget, IoRedirect, Pipeline, RedirectList, SimpleCommand,
};

use super::command;
use super::config::PolicyConfig;
use super::glob::Globbing;
use super::guard::{self, Stack};
use super::nested::Stdin;
use super::violation::Violation;
use super::words::{self, NestedScripts, Word};

/// How many scripts may nest inside each other (`bash -c "bash -c '…'"`,
/// `$( $( … ) )`). Far beyond real use; bounds our own recursion.
const MAX_SCRIPT_NESTING: usize = 32;

/// Scripts nested inside each other on the caller's stack before the rest
/// moves to a large one: each level costs up to ~60 KiB in a debug build.
const CALLER_STACK_SCRIPT_NESTING: usize = 4;

/// Checks a whole script.
pub(crate) fn check_script(
    script: &str,
    config: &PolicyConfig,
    stack: Stack,
) -> Result<(), Violation> {
    Walker {
        config,
        globbing: Globbing::of_script(script),
        script_depth: 0,
        stack,
    }
    .script(script)
}

/// brush-parser 0.4 does not know bash's `select NAME [in WORDS]; do ...;
/// done`, which runs its body like a `for` loop over the words; for the
/// policy the two are the same, so a script that fails to parse is tried
/// again with each `select` keyword written as `for`. `None` when the
/// script has no such keyword.
fn select_as_for(text: &str) -> Option<String> {
    const KEYWORD: &str = "select";
    let mut rewritten = String::with_capacity(text.len());
    let mut found = false;
    let mut rest = text;
    while let Some(index) = rest.find(KEYWORD) {
        // The character before, possibly the end of what is already copied.
        let before = rest[..index]
            .chars()
            .last()
            .or_else(|| rewritten.chars().last());
        let after = rest[index + KEYWORD.len()..].chars().next();
        let starts_word = before
            .is_none_or(|character| character.is_whitespace() || ";&|(){}!".contains(character));
        let ends_word = after.is_some_and(|character| character == ' ' || character == '\t');
        rewritten.push_str(&rest[..index]);
        if starts_word && ends_word {
            rewritten.push_str("for");
            found = true;
        } else {
            rewritten.push_str(KEYWORD);
        }
        rest = &rest[index + KEYWORD.len()..];
    }
    rewritten.push_str(rest);
    found.then_some(rewritten)
}

/// Walks the AST, carrying the policy and how deep scripts nest.
pub(crate) struct Walker<'a> {
    pub(crate) config: &'a PolicyConfig,
    globbing: Globbing,
    script_depth: usize,
    stack: Stack,
}

impl super::nested::CheckScript for Walker<'_> {
    fn config(&self) -> &PolicyConfig {
        self.config
    }

    fn globbing(&self) -> Globbing {
        self.globbing
    }

    fn script(&mut self, text: &str) -> Result<(), Violation> {
        Walker::script(self, text)
    }
}

impl Walker<'_> {
    /// Parses and checks a script, also one found inside another.
    pub(crate) fn script(&mut self, text: &str) -> Result<(), Violation> {
        if text.trim().is_empty() {
            return Ok(());
        }
        if self.script_depth >= MAX_SCRIPT_NESTING {
            return Err(guard::too_deep(self.script_depth, MAX_SCRIPT_NESTING));
        }
        if self.script_depth > 0 {
            guard::check_nesting(text)?;
        }
        if self.stack == Stack::Caller && self.script_depth >= CALLER_STACK_SCRIPT_NESTING {
            let config = self.config;
            let globbing = self.globbing;
            let script_depth = self.script_depth;
            return guard::on_large_stack(|| {
                Walker {
                    config,
                    globbing,
                    script_depth,
                    stack: Stack::Large,
                }
                .script(text)
            });
        }
        let program = match Parser::new(text.as_bytes(), &words::parser_options()).parse_program() {
            Ok(program) => program,
            Err(error) => select_as_for(text)
                .and_then(|rewritten| {
                    Parser::new(rewritten.as_bytes(), &words::parser_options())
                        .parse_program()
                        .ok()
                })
                .ok_or_else(|| Violation::parse_error(&error.to_string()))?,
        };
        self.script_depth += 1;
        let result = program
            .complete_commands
            .iter()
            .try_for_each(|list| self.compound_list(list));
        self.script_depth -= 1;
        result
    }

    /// Decodes a word and checks the code inside it.
    pub(crate) fn word(&mut self, raw: &str) -> Result<Word, Violation> {
        // Most words are plain text; skip the word parser for them.
        if !raw.contains(['$', '`', '\'', '"', '\\', '~']) {
            return Ok(Word::literal(raw));
        }
        let mut nested = NestedScripts::new();
        let word = words::decode(raw, &mut nested)?;
        self.nested(&nested)?;
        Ok(word)
    }

    fn nested(&mut self, scripts: &NestedScripts) -> Result<(), Violation> {
        scripts.iter().try_for_each(|script| self.script(script))
    }

    fn compound_list(&mut self, list: &CompoundList) -> Result<(), Violation> {
        for item in &list.0 {
            for (_, pipeline) in &item.0 {
                self.pipeline(pipeline)?;
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, pipeline: &Pipeline) -> Result<(), Violation> {
        // What a command writes to the next one matters when that one is a
        // shell reading its script from stdin: `echo 'rm -rf /' | sh`.
        let mut output: Option<String> = None;
        for command in &pipeline.seq {
            output = self.command(command, output.as_deref())?;
        }
        Ok(())
    }

    /// Checks a command; returns the script text it pipes out, if known.
    fn command(
        &mut self,
        command: &Command,
        piped: Option<&str>,
    ) -> Result<Option<String>, Violation> {
        match command {
            Command::Simple(simple) => return self.simple(simple, piped),
            Command::Compound(compound, redirects) => {
                self.redirect_list(redirects.as_ref())?;
                self.compound(compound)?;
            }
            Command::Function(definition) => {
                // A function body is checked even if it is never called.
                self.compound(&definition.body.0)?;
                self.redirect_list(definition.body.1.as_ref())?;
            }
            Command::ExtendedTest(test, redirects) => {
                self.redirect_list(redirects.as_ref())?;
                self.extended_test(&test.expr)?;
            }
        }
        Ok(None)
    }

    fn compound(&mut self, compound: &CompoundCommand) -> Result<(), Violation> {
        match compound {
            CompoundCommand::Arithmetic(arithmetic) => self.arithmetic(&arithmetic.expr.value),
            CompoundCommand::ArithmeticForClause(clause) => {
                for expression in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&expression.value)?;
                }
                self.compound_list(&clause.body.list)
            }
            CompoundCommand::BraceGroup(group) => self.compound_list(&group.list),
            CompoundCommand::Subshell(subshell) => self.compound_list(&subshell.list),
            CompoundCommand::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    self.word(&value.value)?;
                }
                self.compound_list(&clause.body.list)
            }
            CompoundCommand::CaseClause(clause) => {
                self.word(&clause.value.value)?;
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        self.word(&pattern.value)?;
                    }
                    if let Some(body) = &item.cmd {
                        self.compound_list(body)?;
                    }
                }
                Ok(())
            }
            CompoundCommand::IfClause(clause) => {
                self.compound_list(&clause.condition)?;
                self.compound_list(&clause.then)?;
                for branch in clause.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.compound_list(condition)?;
                    }
                    self.compound_list(&branch.body)?;
                }
                Ok(())
            }
            CompoundCommand::WhileClause(clause) | CompoundCommand::UntilClause(clause) => {
                self.compound_list(&clause.0)?;
                self.compound_list(&clause.1.list)
            }
            CompoundCommand::Coprocess(coprocess) => {
                self.command(&coprocess.body, None).map(|_| ())
            }
        }
    }

    fn arithmetic(&mut self, expression: &str) -> Result<(), Violation> {
        let mut nested = NestedScripts::new();
        words::collect_substitutions(expression, &mut nested, 0)?;
        self.nested(&nested)
    }

    fn extended_test(&mut self, expression: &ExtendedTestExpr) -> Result<(), Violation> {
        match expression {
            ExtendedTestExpr::And(left, right) | ExtendedTestExpr::Or(left, right) => {
                self.extended_test(left)?;
                self.extended_test(right)
            }
            ExtendedTestExpr::Not(inner) | ExtendedTestExpr::Parenthesized(inner) => {
                self.extended_test(inner)
            }
            ExtendedTestExpr::UnaryTest(_, word) => self.word(&word.value).map(|_| ()),
            ExtendedTestExpr::BinaryTest(_, left, right) => {
                self.word(&left.value)?;
                self.word(&right.value).map(|_| ())
            }
        }
    }

    fn simple(
        &mut self,
        simple: &SimpleCommand,
        piped: Option<&str>,
    ) -> Result<Option<String>, Violation> {
        let mut argv = Vec::new();
        let mut stdin = Stdin::default();
        for item in simple.prefix.iter().flat_map(|prefix| prefix.0.iter()) {
            self.item(item, false, &mut argv, &mut stdin)?;
        }
        if let Some(name) = &simple.word_or_name {
            argv.push(self.word(&name.value)?);
        }
        for item in simple.suffix.iter().flat_map(|suffix| suffix.0.iter()) {
            self.item(item, true, &mut argv, &mut stdin)?;
        }
        if stdin.script.is_none() {
            stdin.script = piped.map(str::to_owned);
        }
        command::check(self, &argv, &stdin)?;
        Ok(command::piped_script(&argv, &stdin))
    }

    fn item(
        &mut self,
        item: &CommandPrefixOrSuffixItem,
        after_name: bool,
        argv: &mut Vec<Word>,
        stdin: &mut Stdin,
    ) -> Result<(), Violation> {
        match item {
            CommandPrefixOrSuffixItem::Word(word) => argv.push(self.word(&word.value)?),
            CommandPrefixOrSuffixItem::AssignmentWord(assignment, word) => {
                self.assignment(&assignment.value)?;
                // After the command name an assignment is an argument
                // (`env X=1 rm`, `declare x=1`): keep it for the rules.
                if after_name {
                    argv.push(self.word(&word.value)?);
                }
            }
            CommandPrefixOrSuffixItem::IoRedirect(redirect) => self.redirect(redirect, stdin)?,
            CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                self.compound_list(&subshell.list)?;
            }
        }
        Ok(())
    }

    fn assignment(&mut self, value: &AssignmentValue) -> Result<(), Violation> {
        match value {
            AssignmentValue::Scalar(word) => self.word(&word.value).map(|_| ()),
            AssignmentValue::Array(elements) => {
                for (key, value) in elements {
                    if let Some(key) = key {
                        self.word(&key.value)?;
                    }
                    self.word(&value.value)?;
                }
                Ok(())
            }
        }
    }

    fn redirect_list(&mut self, redirects: Option<&RedirectList>) -> Result<(), Violation> {
        let mut stdin = Stdin::default();
        for redirect in redirects.iter().flat_map(|list| list.0.iter()) {
            self.redirect(redirect, &mut stdin)?;
        }
        Ok(())
    }

    fn redirect(&mut self, redirect: &IoRedirect, stdin: &mut Stdin) -> Result<(), Violation> {
        match redirect {
            IoRedirect::File(_, _, target) => match target {
                IoFileRedirectTarget::Filename(word) | IoFileRedirectTarget::Duplicate(word) => {
                    self.word(&word.value).map(|_| ())
                }
                IoFileRedirectTarget::Fd(_) => Ok(()),
                IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                    self.compound_list(&subshell.list)
                }
            },
            IoRedirect::HereDocument(_, document) => {
                if document.requires_expansion {
                    let mut nested = NestedScripts::new();
                    words::collect_heredoc_substitutions(&document.doc.value, &mut nested)?;
                    self.nested(&nested)?;
                }
                stdin.script = Some(document.doc.value.clone());
                Ok(())
            }
            IoRedirect::HereString(_, word) => {
                let word = self.word(&word.value)?;
                stdin.script = Some(word.loose_value());
                Ok(())
            }
            IoRedirect::OutputAndError(word, _) => self.word(&word.value).map(|_| ()),
        }
    }
}

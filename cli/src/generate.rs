//! `bashtool completions SHELL` and `bashtool man`: shell completions and a
//! man page generated from the clap definitions, so they never drift from
//! the flags.

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, Command};
use clap_complete::Shell;

/// Print a shell completion script
///
/// Writes the completion script for SHELL to stdout. Install it where your
/// shell looks for completions (the examples below).
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  bash:  mkdir -p ~/.local/share/bash-completion/completions
         bashtool completions bash > ~/.local/share/bash-completion/completions/bashtool
  zsh:   mkdir -p ~/.zfunc && bashtool completions zsh > ~/.zfunc/_bashtool
         (and fpath+=~/.zfunc before compinit in ~/.zshrc)
  fish:  mkdir -p ~/.config/fish/completions
         bashtool completions fish > ~/.config/fish/completions/bashtool.fish")]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

/// Print the man page (roff)
///
/// Writes bashtool's man page, with every subcommand, to stdout.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  man -l <(bashtool man)                  (read it now)
  mkdir -p ~/.local/share/man/man1
  bashtool man > ~/.local/share/man/man1/bashtool.1   (then `man bashtool`)")]
pub struct ManArgs {}

pub fn completions(args: &CompletionsArgs, mut command: Command) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "bashtool", &mut script);
    std::io::stdout().lock().write_all(&script)?;
    Ok(ExitCode::SUCCESS)
}

/// One page: the top command's sections, then a section per subcommand
/// (its description, usage and options as subsections), so `man bashtool`
/// documents everything in one place.
pub fn man(_args: &ManArgs, command: Command) -> anyhow::Result<ExitCode> {
    let command = command.disable_help_subcommand(true);
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut page)?;
    for subcommand in command.get_subcommands() {
        let name = subcommand.get_name();
        let man = clap_mangen::Man::new(
            subcommand
                .clone()
                .bin_name(format!("bashtool {name}"))
                .name(format!("bashtool {name}")),
        );
        let mut sections = Vec::new();
        man.render_description_section(&mut sections)?;
        man.render_synopsis_section(&mut sections)?;
        if subcommand
            .get_arguments()
            .any(|argument| !argument.is_hide_set())
        {
            man.render_options_section(&mut sections)?;
        }
        page.extend_from_slice(format!(".SH \"BASHTOOL {}\"\n", name.to_uppercase()).as_bytes());
        page.extend_from_slice(&as_subsections(&sections));
    }
    std::io::stdout().lock().write_all(&page)?;
    Ok(ExitCode::SUCCESS)
}

/// A subcommand's sections nested under its own heading: `.SH` becomes `.SS`.
fn as_subsections(roff: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(roff);
    let mut nested = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match line.strip_prefix(".SH ") {
            Some(rest) => {
                nested.push_str(".SS ");
                nested.push_str(rest);
            }
            None => nested.push_str(line),
        }
    }
    nested.into_bytes()
}

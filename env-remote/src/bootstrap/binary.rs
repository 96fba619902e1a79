//! The build of `bashtool` a bootstrap uploads: a Linux ELF executable,
//! read once for what the far side must match (its architecture, the
//! dynamic loader it needs, if any) and what proves the copy over there is
//! whole (its size and SHA-256).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::error::Error;

/// A processor architecture, as `uname -m` names it over there and as an
/// ELF header names it here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    X86_64,
    Aarch64,
    Arm,
    X86,
    Riscv64,
    Powerpc64le,
    S390x,
    Loongarch64,
}

impl Architecture {
    /// Every architecture, for messages that list them.
    const ALL: [Self; 8] = [
        Self::X86_64,
        Self::Aarch64,
        Self::Arm,
        Self::X86,
        Self::Riscv64,
        Self::Powerpc64le,
        Self::S390x,
        Self::Loongarch64,
    ];

    /// The architecture `uname -m` prints, or `None` for one bashtool
    /// does not know.
    pub fn from_uname(machine: &str) -> Option<Self> {
        Some(match machine {
            "x86_64" | "amd64" => Self::X86_64,
            "aarch64" | "arm64" | "aarch64_be" => Self::Aarch64,
            "i386" | "i486" | "i586" | "i686" => Self::X86,
            "riscv64" => Self::Riscv64,
            "ppc64le" => Self::Powerpc64le,
            "s390x" => Self::S390x,
            "loongarch64" => Self::Loongarch64,
            arm if arm.starts_with("armv") => Self::Arm,
            _ => return None,
        })
    }

    /// The architecture of an ELF header's `e_machine`.
    fn from_elf_machine(machine: u16) -> Option<Self> {
        Some(match machine {
            62 => Self::X86_64,
            183 => Self::Aarch64,
            40 => Self::Arm,
            3 => Self::X86,
            243 => Self::Riscv64,
            21 => Self::Powerpc64le,
            22 => Self::S390x,
            258 => Self::Loongarch64,
            _ => return None,
        })
    }

    /// Its usual name (`x86_64`).
    pub fn name(self) -> &'static str {
        match self {
            Self::X86_64 => "x86_64",
            Self::Aarch64 => "aarch64",
            Self::Arm => "arm",
            Self::X86 => "i686",
            Self::Riscv64 => "riscv64",
            Self::Powerpc64le => "powerpc64le",
            Self::S390x => "s390x",
            Self::Loongarch64 => "loongarch64",
        }
    }

    /// The Rust target of a static build for it.
    pub fn static_target(self) -> &'static str {
        match self {
            Self::X86_64 => "x86_64-unknown-linux-musl",
            Self::Aarch64 => "aarch64-unknown-linux-musl",
            Self::Arm => "armv7-unknown-linux-musleabihf",
            Self::X86 => "i686-unknown-linux-musl",
            Self::Riscv64 => "riscv64gc-unknown-linux-musl",
            Self::Powerpc64le => "powerpc64le-unknown-linux-musl",
            Self::S390x => "s390x-unknown-linux-musl",
            Self::Loongarch64 => "loongarch64-unknown-linux-musl",
        }
    }

    /// The names of every architecture, for a message.
    pub fn known_names() -> String {
        Self::ALL
            .iter()
            .map(|architecture| architecture.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A Linux build of `bashtool` to upload, inspected once.
#[derive(Debug, Clone)]
pub struct ServeBinary {
    path: PathBuf,
    architecture: Architecture,
    interpreter: Option<String>,
    size: u64,
    sha256: String,
}

impl ServeBinary {
    /// Reads and checks `path`: a Linux executable (ELF, for an
    /// architecture bashtool knows), and its size and SHA-256.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, Error> {
        let path = path.into();
        let bad = |message: String| Error::ServeBinary {
            path: path.clone(),
            message,
        };
        let mut file = std::fs::File::open(&path).map_err(|error| bad(error.to_string()))?;
        let metadata = file.metadata().map_err(|error| bad(error.to_string()))?;
        if !metadata.is_file() {
            return Err(bad("not a regular file".to_owned()));
        }
        let mut head = Vec::new();
        (&mut file)
            .take(HEAD_BYTES)
            .read_to_end(&mut head)
            .map_err(|error| bad(error.to_string()))?;
        let elf = Elf::parse(&head).map_err(bad)?;
        let (size, sha256) = digest_file(&path).map_err(|error| bad(error.to_string()))?;
        Ok(Self {
            architecture: elf.architecture,
            interpreter: elf.interpreter,
            size,
            sha256,
            path,
        })
    }

    /// The build of this very process, when it is a Linux executable that
    /// can be uploaded (`None` on other systems, or when it cannot be read).
    pub fn current_exe() -> Option<Self> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        Self::open(std::env::current_exe().ok()?).ok()
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What it runs on.
    pub fn architecture(&self) -> Architecture {
        self.architecture
    }

    /// The dynamic loader it needs (`/lib64/ld-linux-x86-64.so.2`); `None`
    /// for a static build, which runs anywhere.
    pub fn interpreter(&self) -> Option<&str> {
        self.interpreter.as_deref()
    }

    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Its SHA-256, in lowercase hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }
}

/// How much of a file is read to find its ELF header, program headers and
/// loader path: they sit at the start of every executable a linker makes.
const HEAD_BYTES: u64 = 64 * 1024;

/// The facts of an ELF header that decide where it can run.
struct Elf {
    architecture: Architecture,
    interpreter: Option<String>,
}

/// `PT_INTERP`: the program header naming the dynamic loader.
const PT_INTERP: u32 = 3;

impl Elf {
    /// Parses the start of a file; the error says what it is instead.
    fn parse(head: &[u8]) -> Result<Self, String> {
        if !head.starts_with(b"\x7fELF") {
            return Err(format!("not a Linux executable ({})", what_is(head)));
        }
        // The smallest ELF header (32-bit) has 52 bytes.
        if head.len() < 52 {
            return Err("a truncated ELF header".to_owned());
        }
        let field = |offset: usize, width: usize| -> Result<u64, String> {
            let bytes = head
                .get(offset..offset + width)
                .ok_or_else(|| "a truncated ELF header".to_owned())?;
            let little = head[5] == 1;
            Ok(bytes
                .iter()
                .enumerate()
                .fold(0_u64, |value, (index, byte)| {
                    let shift = if little { index } else { width - 1 - index } * 8;
                    value | (u64::from(*byte) << shift)
                }))
        };
        let wide = match head.get(4) {
            Some(1) => false,
            Some(2) => true,
            _ => return Err("an ELF file of an unknown class".to_owned()),
        };
        // EI_OSABI: System V (what Linux linkers write) or GNU/Linux.
        if !matches!(head.get(7), Some(0 | 3)) {
            return Err("an ELF executable for another system than Linux".to_owned());
        }
        // e_type: an executable or a position-independent one.
        if !matches!(field(16, 2)?, 2 | 3) {
            return Err("an ELF file that is not an executable".to_owned());
        }
        let machine = field(18, 2)? as u16;
        let architecture = Architecture::from_elf_machine(machine).ok_or_else(|| {
            format!(
                "an executable for ELF machine {machine}, not one bashtool can upload to ({})",
                Architecture::known_names()
            )
        })?;
        let (table, entry_size, entries) = if wide {
            (field(32, 8)?, field(54, 2)?, field(56, 2)?)
        } else {
            (field(28, 4)?, field(42, 2)?, field(44, 2)?)
        };
        let mut interpreter = None;
        for index in 0..entries {
            let entry = usize::try_from(table + index * entry_size)
                .map_err(|_| "a program header beyond reach".to_owned())?;
            if field(entry, 4)? as u32 != PT_INTERP {
                continue;
            }
            let (offset, length) = if wide {
                (field(entry + 8, 8)?, field(entry + 32, 8)?)
            } else {
                (field(entry + 4, 4)?, field(entry + 16, 4)?)
            };
            let start = usize::try_from(offset).unwrap_or(usize::MAX);
            let end = start.saturating_add(usize::try_from(length).unwrap_or(usize::MAX));
            let path = head
                .get(start..end)
                .ok_or_else(|| "a loader path beyond the first 64 KiB".to_owned())?;
            let path = String::from_utf8_lossy(path)
                .trim_end_matches('\0')
                .to_owned();
            interpreter = Some(path);
        }
        Ok(Self {
            architecture,
            interpreter,
        })
    }
}

/// What a file that is not ELF seems to be, for the error message.
fn what_is(head: &[u8]) -> &'static str {
    const MACH_O: [[u8; 4]; 5] = [
        [0xcf, 0xfa, 0xed, 0xfe],
        [0xce, 0xfa, 0xed, 0xfe],
        [0xfe, 0xed, 0xfa, 0xcf],
        [0xfe, 0xed, 0xfa, 0xce],
        [0xca, 0xfe, 0xba, 0xbe],
    ];
    if head.starts_with(b"MZ") {
        "a Windows executable"
    } else if MACH_O.iter().any(|magic| head.starts_with(magic)) {
        "a macOS executable"
    } else if head.starts_with(b"#!") {
        "a script"
    } else {
        "not an executable at all"
    }
}

/// The size and SHA-256 (lowercase hex) of the file at `path`.
fn digest_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; 256 * 1024];
    let mut size = 0_u64;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        size += read as u64;
    }
    Ok((size, hex(&hasher.finalize())))
}

/// Bytes as lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|byte| {
            [
                char::from(DIGITS[usize::from(byte >> 4)]),
                char::from(DIGITS[usize::from(byte & 0xf)]),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 64-bit little-endian ELF header for `machine`, with one
    /// program header that names `interpreter` when given.
    fn elf64(machine: u16, interpreter: Option<&str>) -> Vec<u8> {
        let mut bytes = vec![0_u8; 64 + 56];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 2; // 64-bit
        bytes[5] = 1; // little-endian
        bytes[6] = 1; // version
        bytes[16..18].copy_from_slice(&3_u16.to_le_bytes()); // ET_DYN
        bytes[18..20].copy_from_slice(&machine.to_le_bytes());
        bytes[32..40].copy_from_slice(&64_u64.to_le_bytes()); // e_phoff
        bytes[54..56].copy_from_slice(&56_u16.to_le_bytes()); // e_phentsize
        bytes[56..58].copy_from_slice(&1_u16.to_le_bytes()); // e_phnum
        if let Some(path) = interpreter {
            let offset = bytes.len() as u64;
            let text = format!("{path}\0");
            bytes[64..68].copy_from_slice(&PT_INTERP.to_le_bytes());
            bytes[72..80].copy_from_slice(&offset.to_le_bytes());
            bytes[96..104].copy_from_slice(&(text.len() as u64).to_le_bytes());
            bytes.extend_from_slice(text.as_bytes());
        } else {
            bytes[64..68].copy_from_slice(&1_u32.to_le_bytes()); // PT_LOAD
        }
        bytes
    }

    #[test]
    fn reads_the_architecture_and_the_loader_of_an_elf_executable() {
        let dynamic = Elf::parse(&elf64(62, Some("/lib64/ld-linux-x86-64.so.2"))).expect("ELF");
        assert_eq!(dynamic.architecture, Architecture::X86_64);
        assert_eq!(
            dynamic.interpreter.as_deref(),
            Some("/lib64/ld-linux-x86-64.so.2")
        );
        let fixed = Elf::parse(&elf64(183, None)).expect("ELF");
        assert_eq!(fixed.architecture, Architecture::Aarch64);
        assert_eq!(fixed.interpreter, None);
    }

    #[test]
    fn names_what_a_file_is_when_it_cannot_be_uploaded() {
        let refused = |bytes: &[u8]| Elf::parse(bytes).err().expect("refused");
        assert_eq!(
            refused(b"MZ\x90\x00"),
            "not a Linux executable (a Windows executable)"
        );
        assert_eq!(
            refused(&[0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1]),
            "not a Linux executable (a macOS executable)"
        );
        assert_eq!(refused(b"#!/bin/sh\n"), "not a Linux executable (a script)");
        assert_eq!(refused(b"\x7fELF\x02\x01"), "a truncated ELF header");
        assert_eq!(
            refused(&elf64(8, None)),
            "an executable for ELF machine 8, not one bashtool can upload to (x86_64, aarch64, arm, i686, riscv64, powerpc64le, s390x, loongarch64)"
        );
        let mut freebsd = elf64(62, None);
        freebsd[7] = 9;
        assert_eq!(
            refused(&freebsd),
            "an ELF executable for another system than Linux"
        );
    }

    #[test]
    fn maps_what_uname_prints() {
        for (machine, expected) in [
            ("x86_64", Some(Architecture::X86_64)),
            ("aarch64", Some(Architecture::Aarch64)),
            ("arm64", Some(Architecture::Aarch64)),
            ("armv7l", Some(Architecture::Arm)),
            ("i686", Some(Architecture::X86)),
            ("mips64", None),
            ("", None),
        ] {
            assert_eq!(Architecture::from_uname(machine), expected, "{machine}");
        }
    }

    #[test]
    fn inspects_the_running_test_binary() {
        let binary = ServeBinary::open(std::env::current_exe().expect("exe")).expect("readable");
        assert_eq!(
            binary.size(),
            std::fs::metadata(binary.path()).expect("metadata").len()
        );
        assert_eq!(binary.sha256().len(), 64);
        assert_eq!(
            Some(binary.architecture()),
            Architecture::from_uname(std::env::consts::ARCH)
        );
    }

    #[test]
    fn hashes_as_sha256sum_does() {
        let mut hasher = Sha256::new();
        hasher.update(b"abc");
        assert_eq!(
            hex(&hasher.finalize()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

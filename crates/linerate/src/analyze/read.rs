//! Streaming pcap and pcapng reader: any `Read` in, one [`Frame`] at a time out, in constant
//! memory (pcap-parser's circular buffer, 1 MiB, grown up to [`MAX_BLOCK`] for one block).
//!
//! Classic pcap (microsecond and nanosecond, either byte order) and pcapng (several sections
//! and interfaces, each with its own link type and timestamp resolution) are read. A file
//! that ends in the middle of a record (a capture cut off) is read up to that record and the
//! summary says so; anything else malformed is a [`CaptureError`] naming the byte offset.

use std::fmt;
use std::io::Read;

use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{PcapBlockOwned, PcapError};

/// Initial buffer size.
const BUFFER: usize = 1 << 20;
/// Largest block accepted: no capture linerate or tcpdump writes comes near it (a record
/// holds at most one packet of at most 256 KiB), and a hostile length cannot make the
/// reader allocate more.
pub const MAX_BLOCK: usize = 64 << 20;

/// One captured packet.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// Capture time, ns since the epoch (or whatever the file's clock counts from).
    pub ts_ns: u64,
    /// The LINKTYPE_ of the interface.
    pub link_type: u32,
    /// The bytes captured (at most the snap length).
    pub data: &'a [u8],
    /// The packet's length on the wire.
    pub orig_len: u32,
}

/// What the reader saw besides the frames.
#[derive(Debug, Clone, Default)]
pub struct ReadSummary {
    /// "pcap" or "pcapng".
    pub format: &'static str,
    /// Packet records read.
    pub records: u64,
    /// The file ended inside a record: where and how.
    pub truncated: Option<String>,
}

/// A capture that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError {
    /// Byte offset in the file.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for CaptureError {}

fn err(offset: u64, message: impl Into<String>) -> CaptureError {
    CaptureError {
        offset,
        message: message.into(),
    }
}

struct Interface {
    link_type: u32,
    units_per_s: u64,
    offset_s: i64,
}

/// The magic numbers of classic pcap (µs and ns, either byte order) and of pcapng.
const MAGICS: [[u8; 4]; 5] = [
    [0xd4, 0xc3, 0xb2, 0xa1],
    [0xa1, 0xb2, 0xc3, 0xd4],
    [0x4d, 0x3c, 0xb2, 0xa1],
    [0xa1, 0xb2, 0x3c, 0x4d],
    PCAPNG_MAGIC,
];
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// Reads every packet of a pcap or pcapng stream, calling `each` for each one in order.
pub fn read_capture<R: Read + Send>(
    mut input: R,
    each: impl FnMut(Frame<'_>),
) -> Result<ReadSummary, CaptureError> {
    let head = read_magic(&mut input)?;
    let chained = Fill(std::io::Cursor::new(head.to_vec()).chain(input));
    let reader = pcap_parser::create_reader(BUFFER, chained).map_err(|e| match e {
        PcapError::Incomplete(_) | PcapError::Eof | PcapError::UnexpectedEof => {
            err(0, "the file ends inside its header")
        }
        PcapError::HeaderNotRecognized if head == PCAPNG_MAGIC => {
            err(0, "the pcapng section header is cut short or malformed")
        }
        other => err(0, format!("invalid file header ({})", describe(&other))),
    })?;
    let format = if head == PCAPNG_MAGIC {
        "pcapng"
    } else {
        "pcap"
    };
    read_blocks(reader, format, each)
}

/// Reads the first four bytes and checks that they are a capture's magic number.
fn read_magic(input: &mut impl Read) -> Result<[u8; 4], CaptureError> {
    let mut head = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match input.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(err(0, format!("cannot read: {e}"))),
        }
    }
    if got == 0 {
        return Err(err(0, "the file is empty: not a pcap or pcapng capture"));
    }
    if got < 4 || !MAGICS.contains(&head) {
        let hex: Vec<String> = head[..got].iter().map(|b| format!("{b:02x}")).collect();
        return Err(err(
            0,
            format!(
                "not a pcap or pcapng capture (it starts with {}); write one with tcpdump -w or linerate --capture",
                hex.join(" ")
            ),
        ));
    }
    Ok(head)
}

/// The loop over the file's blocks: each block to [`Blocks::block`], the buffer refilled
/// and grown as blocks need, a cut-off end noted in the summary.
fn read_blocks<'r>(
    mut reader: Box<dyn PcapReaderIterator + Send + 'r>,
    format: &'static str,
    mut each: impl FnMut(Frame<'_>),
) -> Result<ReadSummary, CaptureError> {
    let mut blocks = Blocks {
        summary: ReadSummary {
            format,
            ..ReadSummary::default()
        },
        legacy_link: None,
        legacy_ns: false,
        interfaces: Vec::new(),
        last_ts: 0,
    };
    let mut offset: u64 = 0;
    let mut capacity = BUFFER;
    let mut stuck = 0u32;
    loop {
        match reader.next() {
            Ok((used, block)) => {
                stuck = 0;
                blocks.block(block, offset, &mut each)?;
                reader.consume(used);
                offset += used as u64;
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::UnexpectedEof) => {
                blocks.summary.truncated = Some(tail(offset, reader.data().len()));
                break;
            }
            Err(PcapError::Incomplete(_)) => {
                if reader.reader_exhausted() {
                    blocks.summary.truncated = Some(tail(offset, reader.data().len()));
                    break;
                }
                let before = reader.data().len();
                reader
                    .refill()
                    .map_err(|e| err(offset, format!("cannot read: {}", describe(&e))))?;
                if reader.data().len() == before && !reader.reader_exhausted() {
                    // Nothing came in: the buffer is full, so the block is bigger than it.
                    stuck += 1;
                    grow(&mut *reader, &mut capacity, offset, &mut stuck)?;
                }
            }
            Err(PcapError::BufferTooSmall) => {
                stuck += 1;
                grow(&mut *reader, &mut capacity, offset, &mut stuck)?;
                reader
                    .refill()
                    .map_err(|e| err(offset, format!("cannot read: {}", describe(&e))))?;
            }
            Err(e) => {
                return Err(err(
                    offset,
                    format!("malformed {} block ({})", format, describe(&e)),
                ))
            }
        }
    }
    Ok(blocks.summary)
}

/// What the blocks read so far say about the ones to come: the classic header's link type
/// and precision, the section's interfaces, the last timestamp (a simple packet has none).
struct Blocks {
    summary: ReadSummary,
    legacy_link: Option<u32>,
    legacy_ns: bool,
    interfaces: Vec<Interface>,
    last_ts: u64,
}

impl Blocks {
    /// One block at byte `offset`: a header or description updates the state, a packet
    /// goes to `each`.
    fn block(
        &mut self,
        block: PcapBlockOwned<'_>,
        offset: u64,
        each: &mut impl FnMut(Frame<'_>),
    ) -> Result<(), CaptureError> {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.legacy_link = Some(h.network.0 as u32);
                self.legacy_ns = h.is_nanosecond_precision();
            }
            PcapBlockOwned::Legacy(b) => {
                let link = self
                    .legacy_link
                    .ok_or_else(|| err(offset, "packet before the file header"))?;
                let sub = if self.legacy_ns {
                    u64::from(b.ts_usec)
                } else {
                    u64::from(b.ts_usec) * 1000
                };
                let ts = u64::from(b.ts_sec) * 1_000_000_000 + sub;
                self.last_ts = ts;
                let n = (b.caplen as usize).min(b.data.len());
                self.summary.records += 1;
                each(Frame {
                    ts_ns: ts,
                    link_type: link,
                    data: &b.data[..n],
                    orig_len: b.origlen,
                });
            }
            PcapBlockOwned::NG(Block::SectionHeader(_)) => self.interfaces.clear(),
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                let units = idb.ts_resolution().filter(|u| *u > 0).ok_or_else(|| {
                    err(
                        offset,
                        format!(
                            "interface {} has an unusable timestamp resolution ({})",
                            self.interfaces.len(),
                            idb.if_tsresol
                        ),
                    )
                })?;
                self.interfaces.push(Interface {
                    link_type: idb.linktype.0 as u32,
                    units_per_s: units,
                    offset_s: idb.ts_offset(),
                });
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                self.enhanced(&epb, offset, each)?;
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                let i = self
                    .interfaces
                    .first()
                    .ok_or_else(|| err(offset, "a packet before any interface description"))?;
                self.summary.records += 1;
                let n = (spb.origlen as usize).min(spb.data.len());
                each(Frame {
                    ts_ns: self.last_ts,
                    link_type: i.link_type,
                    data: &spb.data[..n],
                    orig_len: spb.origlen,
                });
            }
            PcapBlockOwned::NG(_) => {}
        }
        Ok(())
    }

    /// A pcapng enhanced packet: its timestamp in its interface's units and offset.
    fn enhanced(
        &mut self,
        epb: &pcap_parser::pcapng::EnhancedPacketBlock<'_>,
        offset: u64,
        each: &mut impl FnMut(Frame<'_>),
    ) -> Result<(), CaptureError> {
        let i = self.interfaces.get(epb.if_id as usize).ok_or_else(|| {
            err(
                offset,
                format!(
                    "a packet names interface {} but the section describes {}",
                    epb.if_id,
                    self.interfaces.len()
                ),
            )
        })?;
        let units = (u128::from(epb.ts_high) << 32) | u128::from(epb.ts_low);
        let ns = units * 1_000_000_000 / u128::from(i.units_per_s);
        let ns = (ns as i128 + i128::from(i.offset_s) * 1_000_000_000)
            .clamp(0, i128::from(u64::MAX)) as u64;
        self.last_ts = ns;
        let n = (epb.caplen as usize).min(epb.data.len());
        self.summary.records += 1;
        each(Frame {
            ts_ns: ns,
            link_type: i.link_type,
            data: &epb.data[..n],
            orig_len: epb.origlen,
        });
        Ok(())
    }
}

/// A reader whose `read` fills the buffer unless the input ends: pcap-parser decides the
/// format from its first `read`, which must hold the whole file header.
struct Fill<R>(R);

impl<R: Read> Read for Fill<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match self.0.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if n > 0 => {
                    let _ = e;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

fn grow(
    reader: &mut (dyn PcapReaderIterator + Send),
    capacity: &mut usize,
    offset: u64,
    stuck: &mut u32,
) -> Result<(), CaptureError> {
    if *capacity >= MAX_BLOCK || *stuck > 8 {
        return Err(err(
            offset,
            format!(
                "a block longer than {} MiB (a corrupt length field?)",
                MAX_BLOCK >> 20
            ),
        ));
    }
    *capacity = (*capacity * 2).min(MAX_BLOCK);
    if !reader.grow(*capacity) {
        return Err(err(offset, "cannot grow the read buffer"));
    }
    Ok(())
}

fn tail(offset: u64, left: usize) -> String {
    format!("the file ends inside the record at byte {offset} ({left} bytes of it present): the capture was cut off; the records before it were analysed")
}

fn describe<I: std::fmt::Debug>(e: &PcapError<I>) -> String {
    match e {
        PcapError::HeaderNotRecognized => "header not recognized".into(),
        PcapError::NomError(_, k) | PcapError::OwnedNomError(_, k) => {
            format!("invalid field: {}", k.description())
        }
        PcapError::ReadError => "read error".into(),
        other => format!("{other:?}"),
    }
}

/**
 * The zip container of .docx/.xlsx/.pptx files, read from memory with Node's own inflate. Only the central directory
 * is trusted for names and sizes; safety limits are checked before anything is inflated, and inflating stops at the
 * declared size, so a zip bomb or a lying header is an error, not a memory blow-up.
 */
import { inflateRawSync } from 'node:zlib';
import { DocumentError } from './kinds.js';

export const MAX_ARCHIVE_MEMBERS = 10_000;
export const MAX_MEMBER_BYTES = 128 * 1024 * 1024;
export const MAX_ARCHIVE_BYTES = 256 * 1024 * 1024;

interface Member {
  method: number;
  compressedSize: number;
  size: number;
  localOffset: number;
}

export interface ZipArchive {
  has(name: string): boolean;
  /** A member's bytes, or undefined when there is no such member. */
  read(name: string): Buffer | undefined;
}

const CFB_MAGIC = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);

/** Opens an OOXML package; a password-protected one (an OLE container, not a zip) gets its own error. */
export function openZip(data: Buffer, label: string): ZipArchive {
  if (data.subarray(0, 8).equals(CFB_MAGIC)) {
    if (data.includes(Buffer.from('EncryptedPackage', 'utf16le'))) {
      throw new DocumentError(`the ${label} file is encrypted (password-protected); nanobot cannot open it`);
    }
    throw new DocumentError(
      `this is an old binary Office file (.doc/.xls/.ppt) saved with a .${label.toLowerCase()} name; it cannot be read`,
    );
  }
  const members = centralDirectory(data, label);
  return {
    has: (name) => members.has(name),
    read(name) {
      const member = members.get(name);
      return member ? inflate(data, member, name, label) : undefined;
    },
  };
}

function corrupt(label: string, why: string): DocumentError {
  return new DocumentError(`not a valid ${label} file (${why})`);
}

function centralDirectory(data: Buffer, label: string): Map<string, Member> {
  const eocd = data.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]), Math.max(0, data.length - 22));
  if (eocd < 0 || eocd < data.length - 22 - 0xffff) throw corrupt(label, 'no zip directory');
  let count = data.readUInt16LE(eocd + 10);
  let offset = data.readUInt32LE(eocd + 16);
  if (count === 0xffff || offset === 0xffffffff) {
    const locator = eocd - 20;
    if (locator < 0 || data.readUInt32LE(locator) !== 0x07064b50) throw corrupt(label, 'broken zip64 directory');
    const record = Number(data.readBigUInt64LE(locator + 8));
    if (record + 56 > data.length || data.readUInt32LE(record) !== 0x06064b50) {
      throw corrupt(label, 'broken zip64 directory');
    }
    count = Number(data.readBigUInt64LE(record + 32));
    offset = Number(data.readBigUInt64LE(record + 48));
  }
  if (count > MAX_ARCHIVE_MEMBERS) {
    throw new DocumentError(`the ${label} file holds too many parts (${count}, the limit is ${MAX_ARCHIVE_MEMBERS})`);
  }
  const members = new Map<string, Member>();
  let total = 0;
  for (let i = 0; i < count; i++) {
    if (offset + 46 > data.length || data.readUInt32LE(offset) !== 0x02014b50) throw corrupt(label, 'truncated');
    const flags = data.readUInt16LE(offset + 8);
    const nameLength = data.readUInt16LE(offset + 28);
    const extraLength = data.readUInt16LE(offset + 30);
    const commentLength = data.readUInt16LE(offset + 32);
    const name = data.toString('utf8', offset + 46, offset + 46 + nameLength);
    const member: Member = {
      method: data.readUInt16LE(offset + 10),
      compressedSize: data.readUInt32LE(offset + 20),
      size: data.readUInt32LE(offset + 24),
      localOffset: data.readUInt32LE(offset + 42),
    };
    readZip64Extra(data.subarray(offset + 46 + nameLength, offset + 46 + nameLength + extraLength), member);
    if (flags & 0x1) throw new DocumentError(`the ${label} file is encrypted; nanobot cannot open it`);
    if (member.size > MAX_MEMBER_BYTES) {
      throw new DocumentError(`the ${label} file holds a part larger than ${MAX_MEMBER_BYTES / 1024 / 1024} MiB`);
    }
    total += member.size;
    if (total > MAX_ARCHIVE_BYTES) {
      throw new DocumentError(`the ${label} file expands beyond the ${MAX_ARCHIVE_BYTES / 1024 / 1024} MiB limit`);
    }
    members.set(name.replace(/^\/+/, ''), member);
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return members;
}

/** Zip64 sizes and offset (extra field 0x0001) replace the 32-bit ones that are all ones, in order. */
function readZip64Extra(extra: Buffer, member: Member): void {
  for (let at = 0; at + 4 <= extra.length; ) {
    const id = extra.readUInt16LE(at);
    const size = extra.readUInt16LE(at + 2);
    if (id === 0x0001) {
      let field = at + 4;
      const next = (): number => {
        const value = field + 8 <= at + 4 + size ? Number(extra.readBigUInt64LE(field)) : Number.NaN;
        field += 8;
        return value;
      };
      if (member.size === 0xffffffff) member.size = next();
      if (member.compressedSize === 0xffffffff) member.compressedSize = next();
      if (member.localOffset === 0xffffffff) member.localOffset = next();
      return;
    }
    at += 4 + size;
  }
}

function inflate(data: Buffer, member: Member, name: string, label: string): Buffer {
  const at = member.localOffset;
  if (!(at + 30 <= data.length) || data.readUInt32LE(at) !== 0x04034b50) throw corrupt(label, `bad entry ${name}`);
  const start = at + 30 + data.readUInt16LE(at + 26) + data.readUInt16LE(at + 28);
  const raw = data.subarray(start, start + member.compressedSize);
  if (raw.length !== member.compressedSize) throw corrupt(label, `truncated entry ${name}`);
  if (member.method === 0) return raw;
  if (member.method !== 8) throw corrupt(label, `unsupported compression in ${name}`);
  if (member.size === 0) return Buffer.alloc(0);
  try {
    const out = inflateRawSync(raw, { maxOutputLength: member.size });
    if (out.length !== member.size) throw new Error('size mismatch');
    return out;
  } catch {
    throw corrupt(label, `damaged entry ${name}`);
  }
}

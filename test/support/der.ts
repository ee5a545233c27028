/**
 * The DER elements of `bytes` in order, for tests that take a signature apart: each one's tag, its
 * content and its whole encoding (tag, length and content). Definite lengths only.
 */
export interface DerElement {
  tag: number;
  content: Buffer;
  encoding: Buffer;
}

export function derElements(bytes: Buffer): DerElement[] {
  const elements: DerElement[] = [];
  for (let offset = 0; offset < bytes.length; ) {
    const tag = bytes[offset]!;
    let length = bytes[offset + 1]!;
    let header = 2;
    if (length > 0x80) {
      const count = length & 0x7f;
      length = bytes.subarray(offset + 2, offset + 2 + count).reduce((value, byte) => value * 256 + byte, 0);
      header += count;
    }
    elements.push({ tag, content: bytes.subarray(offset + header, offset + header + length), encoding: bytes.subarray(offset, offset + header + length) });
    offset += header + length;
  }
  return elements;
}

/** Checks of the values interface B takes: base64 and SNILS. */

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Whether the text is standard base64, padded (Buffer.from alone would skip bad characters). */
export function isStrictBase64(text: string): boolean {
  return text.length % 4 === 0 && BASE64.test(text);
}

/**
 * The bytes of standard, padded base64 (isStrictBase64's rule); undefined when the text is not that: checked by
 * decoding it, in native passes instead of the regular expression and then the decode. Node's
 * decoder also takes base64url's `-` and `_` (looked for first), and skips or stops at any other
 * character outside the alphabet, so a text that is not strict decodes to fewer bytes than its
 * length and padding say (the argument of decodeStrictBase64, intake/body/base64-member.ts).
 */
export function decodeBase64Strict(text: string): Buffer | undefined {
  const length = text.length;
  if (length % 4 !== 0 || text.includes('-') || text.includes('_')) return undefined;
  const padding = text.charCodeAt(length - 1) === 0x3d ? (text.charCodeAt(length - 2) === 0x3d ? 2 : 1) : 0;
  const decoded = Buffer.from(text, 'base64');
  return decoded.length === (length / 4) * 3 - padding ? decoded : undefined;
}

/** The 11 digits of a SNILS written as digits or as NNN-NNN-NNN NN. */
export function snilsDigits(snils: string): string {
  return snils.replace(/[^0-9]/g, '');
}

/**
 * SNILS check number: the first nine digits weighted 9..1, summed; below 100 the sum itself,
 * 100 and 101 give 00, above 101 the remainder of division by 101 (100 again giving 00).
 * Numbers up to 001-001-998 were issued without a meaningful check number.
 */
export function snilsChecksumValid(snils: string): boolean {
  const digits = snilsDigits(snils);
  if (digits.length !== 11) return false;
  const number = Number(digits.slice(0, 9));
  if (number <= 1_001_998) return true;
  let sum = 0;
  for (let i = 0; i < 9; i += 1) sum += Number(digits[i]) * (9 - i);
  let check = sum;
  if (check > 101) check %= 101;
  if (check === 100 || check === 101) check = 0;
  return check === Number(digits.slice(9));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether the text is a UUID (any version), as interface B's ids are. */
export function isUuid(text: string): boolean {
  return UUID.test(text);
}

/** The length of the base64 of `bytes` bytes (padded). */
export const base64Length = (bytes: number) => 4 * Math.ceil(bytes / 3);

import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

/**
 * A phone in E.164, reading numbers without a country code as of `defaultCountry` (Russian by
 * default: 8XXXXXXXXXX = +7XXXXXXXXXX); undefined when it is no phone number.
 */
export function toE164(text: string, defaultCountry: CountryCode = 'RU'): string | undefined {
  const phone = parsePhoneNumberFromString(text, defaultCountry);
  return phone?.isPossible() ? phone.number : undefined;
}

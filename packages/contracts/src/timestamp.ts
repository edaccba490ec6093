/** Characters `0`-`9` from `start` (inclusive) to `end` (exclusive) as a number, or -1. */
function digitsAt(value: string, start: number, end: number): number {
  let number = 0;
  for (let index = start; index < end; index++) {
    const digit = value.charCodeAt(index) - 48;
    if (digit < 0 || digit > 9) return -1;
    number = number * 10 + digit;
  }
  return number;
}

const daysInMonth = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * An RFC 3339 date and time, as `timestampSchema` takes it: `YYYY-MM-DDTHH:MM:SS`, an optional
 * fraction, then `Z` or `±HH:MM`; real calendar dates only. A leap second (`:60`) is taken where
 * one can be: at 23:59 UTC once the offset is applied, as JSON Schema's `date-time` format says.
 */
export function isTimestamp(value: string): boolean {
  if (value.length < 20 || value[4] !== "-" || value[7] !== "-" || value[10] !== "T") return false;
  if (value[13] !== ":" || value[16] !== ":") return false;
  const year = digitsAt(value, 0, 4);
  const month = digitsAt(value, 5, 7);
  const day = digitsAt(value, 8, 10);
  if (year < 0 || month < 1 || month > 12 || day < 1) return false;
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (day > daysInMonth[month - 1]! + (leap ? 1 : 0)) return false;
  const hour = digitsAt(value, 11, 13);
  const minute = digitsAt(value, 14, 16);
  const second = digitsAt(value, 17, 19);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) return false;
  let index = 19;
  if (value[index] === ".") {
    const fractionStart = ++index;
    while (index < value.length && digitsAt(value, index, index + 1) >= 0) index++;
    if (index === fractionStart) return false;
  }
  if (value[index] === "Z")
    return index + 1 === value.length && (second < 60 || leapSecondFits(hour, minute, 1, 0, 0));
  if ((value[index] !== "+" && value[index] !== "-") || index + 6 !== value.length) return false;
  if (value[index + 3] !== ":") return false;
  const offsetHour = digitsAt(value, index + 1, index + 3);
  const offsetMinute = digitsAt(value, index + 4, index + 6);
  if (offsetHour < 0 || offsetHour > 23 || offsetMinute < 0 || offsetMinute > 59) return false;
  const sign = value[index] === "-" ? -1 : 1;
  return second < 60 || leapSecondFits(hour, minute, sign, offsetHour, offsetMinute);
}

/** A leap second is inserted at the end of 23:59 UTC: the local time minus its offset must be that minute. */
function leapSecondFits(
  hour: number,
  minute: number,
  sign: number,
  offsetHour: number,
  offsetMinute: number,
): boolean {
  const utcMinute = minute - offsetMinute * sign;
  const utcHour = hour - offsetHour * sign - (utcMinute < 0 ? 1 : 0);
  return (utcHour === 23 || utcHour === -1) && (utcMinute === 59 || utcMinute === -1);
}

/**
 * The pattern of an RFC 3339 timestamp in the published schemas (calendar dates, `:60` allowed;
 * where a leap second may fall is left to the `date-time` format).
 */
export const TIMESTAMP_PATTERN = new RegExp(
  "^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))" +
    "T(?:[01]\\d|2[0-3]):[0-5]\\d:(?:[0-5]\\d|60)(?:\\.\\d+)?(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)$",
);

import type { Observation, ObservationRange, ObservationValue } from '../../../generated/ehr-types.js';
import { aliasOf } from '../fhir/references.ts';
import type { DiagnosticReportFragment, MappingContext, ObservationFragment, Ref } from './fragments.ts';
import {
  codeService,
  codings,
  conceptCode,
  conceptText,
  ENTERED_IN_ERROR,
  hasCode,
  instant,
  isObject,
  list,
  periodOf,
  ref,
  text,
  type Json,
} from './values.ts';

/** Observations and the DiagnosticReports that gather them, as fragments. */

function quantityText(quantity: unknown): { value: string; unit: string; code: string } | undefined {
  if (!isObject(quantity) || typeof quantity.value !== 'number') return undefined;
  return { value: String(quantity.value), unit: text(quantity.unit) || text(quantity.code), code: text(quantity.code) };
}

/** value[x] of an Observation or of one of its components, as text. */
export function observationValue(element: Json): ObservationValue | undefined {
  const quantity = quantityText(element.valueQuantity);
  if (quantity) return { value: quantity.value, unit: quantity.unit, code: quantity.code, serializedValue: `${quantity.value} ${quantity.unit}`.trim() };
  if (isObject(element.valueCodeableConcept)) {
    const value = conceptText(element.valueCodeableConcept);
    return { value, code: text(conceptCode(element.valueCodeableConcept)?.code), serializedValue: value };
  }
  if (typeof element.valueString === 'string') return { value: element.valueString, serializedValue: element.valueString };
  for (const member of ['valueBoolean', 'valueInteger', 'valueDateTime', 'valueTime']) {
    const raw = element[member];
    if (typeof raw === 'boolean' || typeof raw === 'number' || typeof raw === 'string') return { value: String(raw), serializedValue: String(raw) };
  }
  if (isObject(element.valueRange)) {
    const low = quantityText(element.valueRange.low);
    const high = quantityText(element.valueRange.high);
    const unit = low?.unit ?? high?.unit ?? '';
    const value = `${low?.value ?? ''}–${high?.value ?? ''}`;
    return { value, unit, serializedValue: `${value} ${unit}`.trim() };
  }
  if (isObject(element.valueRatio)) {
    const value = `${quantityText(element.valueRatio.numerator)?.value ?? ''}/${quantityText(element.valueRatio.denominator)?.value ?? ''}`;
    return { value, serializedValue: value };
  }
  if (isObject(element.valuePeriod)) {
    const { start = '', end = '' } = periodOf(element.valuePeriod);
    return { value: `${start}–${end}`, serializedValue: `${start}–${end}` };
  }
  if (isObject(element.valueSampledData) && typeof element.valueSampledData.data === 'string')
    return { value: element.valueSampledData.data, serializedValue: element.valueSampledData.data };
  return undefined;
}

function rangesOf(element: Json): ObservationRange[] {
  return list(element.referenceRange).map((range) => {
    const low = isObject(range.low) && typeof range.low.value === 'number' ? range.low.value : undefined;
    const high = isObject(range.high) && typeof range.high.value === 'number' ? range.high.value : undefined;
    const unit = text(isObject(range.low) ? range.low.unit : undefined) || text(isObject(range.high) ? range.high.unit : undefined);
    return {
      ...(low === undefined ? {} : { low }),
      ...(high === undefined ? {} : { high }),
      ...(unit ? { unit } : {}),
      ...(typeof range.text === 'string' ? { text: range.text } : {}),
    };
  });
}

function interpretationsOf(concepts: unknown): string[] {
  return list(concepts)
    .map((concept) => conceptText(concept) || text(codings(concept)[0]?.code))
    .filter(Boolean);
}

const LABORATORY = ['laboratory', 'lab'];

export function observation(resource: Json, context: MappingContext): ObservationFragment {
  const encounter = aliasOf(resource.encounter);
  const effective =
    (instant(resource.effectiveDateTime) ?? instant(resource.effectiveInstant))
      ? { start: instant(resource.effectiveDateTime) ?? instant(resource.effectiveInstant) }
      : periodOf(resource.effectivePeriod);
  const issued = instant(resource.issued);
  const at = effective.start ?? issued ?? context.importedAt;
  const type = hasCode(resource.category, LABORATORY) ? 2 : 1;
  const key = conceptText(resource.code);
  const components = list(resource.component).map((component) => ({
    type: type as 1 | 2,
    key: conceptText(component.code),
    value: observationValue(component) ?? { value: '', serializedValue: '' },
    ...(list(component.interpretation).length > 0 ? { interpretation: interpretationsOf(component.interpretation).join(', ') } : {}),
    ranges: rangesOf(component),
  }));
  const joined = components.map((component) => `${component.key} ${component.value.serializedValue}`.trim()).join('; ');
  const value = observationValue(resource) ?? {
    value: joined || conceptText(resource.dataAbsentReason),
    serializedValue: joined || conceptText(resource.dataAbsentReason),
  };
  const note = list(resource.note)
    .map((annotation) => text(annotation.text))
    .filter(Boolean)
    .join('\n');
  const observation: Observation = {
    id: String(resource.id),
    createdDate: at,
    type,
    observationKey: key,
    status: text(resource.status),
    effectivePeriod: { begin: at, end: effective.end ?? at },
    issuedDate: issued ?? at,
    value,
    ...(note ? { note } : {}),
    interpretation: interpretationsOf(resource.interpretation),
    ranges: rangesOf(resource),
    components,
  };
  return { hidden: resource.status === ENTERED_IN_ERROR, ...(encounter ? { encounter } : {}), observation, line: `${key}: ${value.serializedValue}` };
}

export function diagnosticReport(resource: Json, context: MappingContext): DiagnosticReportFragment {
  const encounter = aliasOf(resource.encounter);
  const effective = instant(resource.effectiveDateTime) ? { start: instant(resource.effectiveDateTime) } : periodOf(resource.effectivePeriod);
  const issued = instant(resource.issued);
  const category = list(resource.category)[0];
  return {
    hidden: resource.status === ENTERED_IN_ERROR,
    at: issued ?? effective.start ?? effective.end ?? context.importedAt,
    ...(encounter ? { encounter } : {}),
    status: text(resource.status),
    category: category ? conceptText(category) : '',
    laboratory: hasCode(resource.category, ['lab', 'laboratory']),
    services: [codeService(resource.code)],
    effective,
    ...(issued ? { issued } : {}),
    results: list(resource.result)
      .map(aliasOf)
      .filter((alias): alias is string => alias !== undefined),
    interpreters: list(resource.resultsInterpreter)
      .map(ref)
      .filter((value): value is Ref => value !== undefined),
    performers: list(resource.performer)
      .map(ref)
      .filter((value): value is Ref => value !== undefined),
    conclusion: [text(resource.conclusion), ...list(resource.conclusionCode).map(conceptText)].filter(Boolean),
    attachments: list(resource.presentedForm)
      .map((form) => text(form.url))
      .filter(Boolean),
  };
}

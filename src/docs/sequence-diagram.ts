/**
 * Sequence diagrams as SVG, rendered at build time (scripts/build-docs.ts) from text sources in a
 * subset of Mermaid's `sequenceDiagram` syntax, so that the same files render on a code host too:
 *   participant A as Label      actor A as Label
 *   A->>B: message              A-->>B: reply (dashed)
 *   Note over A,B: text         Note right of A: text        Note left of A: text
 *   loop label … end            alt label … else label … end             opt label … end
 *   %% comment                  <br> breaks a line
 * Nothing is loaded in the browser: the page inlines the SVG. Text widths are estimated from the
 * characters (no font metrics at build time), generously.
 */

type Statement =
  | { kind: 'message'; from: string; to: string; text: string; dashed: boolean }
  | { kind: 'note'; participants: string[]; placement: 'over' | 'left' | 'right'; text: string }
  | { kind: 'block'; keyword: 'loop' | 'alt' | 'opt'; sections: Array<{ label: string; body: Statement[] }> };

interface Diagram {
  participants: Array<{ id: string; label: string }>;
  statements: Statement[];
}

export class DiagramSyntaxError extends Error {}

export function parseSequenceDiagram(source: string): Diagram {
  const lines = source
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('%%'));
  if (lines.shift() !== 'sequenceDiagram') throw new DiagramSyntaxError('a sequence diagram starts with "sequenceDiagram"');
  const participants: Diagram['participants'] = [];
  const participant = (id: string, label = id) => {
    if (!participants.some((known) => known.id === id)) participants.push({ id, label });
    return id;
  };
  const root: Statement[] = [];
  const stack: Array<{ block: Extract<Statement, { kind: 'block' }>; body: Statement[] }> = [];
  const current = () => stack.at(-1)?.body ?? root;
  lines.forEach((line, index) => {
    let match: RegExpExecArray | null;
    if ((match = /^(?:participant|actor)\s+(\S+)(?:\s+as\s+(.+))?$/.exec(line))) {
      participant(match[1]!, match[2]);
    } else if ((match = /^(\S+?)\s*(-->>|->>)\s*(\S+?)\s*:\s*(.*)$/.exec(line))) {
      current().push({ kind: 'message', from: participant(match[1]!), to: participant(match[3]!), dashed: match[2] === '-->>', text: match[4]! });
    } else if ((match = /^Note\s+(over|left of|right of)\s+([^:]+):\s*(.*)$/i.exec(line))) {
      const placement = match[1]!.toLowerCase().split(' ')[0] as 'over' | 'left' | 'right';
      current().push({ kind: 'note', placement, participants: match[2]!.split(',').map((id) => participant(id.trim())), text: match[3]! });
    } else if ((match = /^(loop|alt|opt)\b\s*(.*)$/.exec(line))) {
      const block: Extract<Statement, { kind: 'block' }> = {
        kind: 'block',
        keyword: match[1] as 'loop' | 'alt' | 'opt',
        sections: [{ label: match[2]!, body: [] }],
      };
      current().push(block);
      stack.push({ block, body: block.sections[0]!.body });
    } else if ((match = /^else\b\s*(.*)$/.exec(line)) && stack.at(-1)?.block.keyword === 'alt') {
      const section = { label: match[1]!, body: [] as Statement[] };
      stack.at(-1)!.block.sections.push(section);
      stack.at(-1)!.body = section.body;
    } else if (line === 'end' && stack.length > 0) {
      stack.pop();
    } else {
      throw new DiagramSyntaxError(`line ${index + 2}: cannot read "${line}"`);
    }
  });
  if (stack.length > 0) throw new DiagramSyntaxError(`"${stack.at(-1)!.block.keyword}" without "end"`);
  return { participants, statements: root };
}

const FONT_SIZE = 13;
const LINE_HEIGHT = 17;

/** An estimate of the width of `text` in the diagram font: wide enough for common sans-serif fonts. */
export function textWidth(text: string): number {
  let em = 0;
  for (const character of text) {
    if (/[iIl.,:;'|!()[\]{}]/.test(character)) em += 0.32;
    else if (character === ' ') em += 0.3;
    else if (/[MWmwЖШЩЮФмшщжю@%]/.test(character)) em += 0.9;
    else if (/[A-ZА-ЯЁ]/.test(character)) em += 0.7;
    else em += 0.58;
  }
  return Math.ceil(em * FONT_SIZE);
}

const lineBreaks = (text: string) => text.split(/<br\s*\/?>/i);
const widest = (text: string) => Math.max(...lineBreaks(text).map(textWidth));
const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const MARGIN = 20;
const BOX_HEIGHT = 36;
const MIN_GAP = 150;
const MESSAGE_PADDING = 36;
const FRAME_PADDING = 12;

function allStatements(statements: Statement[]): Statement[] {
  return statements.flatMap((statement) =>
    statement.kind === 'block' ? [statement, ...statement.sections.flatMap((section) => allStatements(section.body))] : [statement],
  );
}

/** The x of each participant's lifeline: boxes fit their labels, gaps fit the messages between. */
function columns(diagram: Diagram): Map<string, number> {
  const index = new Map(diagram.participants.map((participant, position) => [participant.id, position]));
  const boxWidth = diagram.participants.map((participant) => Math.max(110, widest(participant.label) + 24));
  const gaps = diagram.participants.slice(1).map((_, position) => Math.max(MIN_GAP, (boxWidth[position]! + boxWidth[position + 1]!) / 2 + 20));
  const spans: Array<{ from: number; to: number; width: number }> = [];
  for (const statement of allStatements(diagram.statements)) {
    if (statement.kind === 'message') {
      const [a, b] = [index.get(statement.from)!, index.get(statement.to)!].sort((x, y) => x - y) as [number, number];
      if (a === b) spans.push({ from: a, to: Math.min(a + 1, diagram.participants.length - 1), width: widest(statement.text) + 60 });
      else spans.push({ from: a, to: b, width: widest(statement.text) + MESSAGE_PADDING });
    } else if (statement.kind === 'note' && statement.participants.length > 1) {
      const positions = statement.participants.map((id) => index.get(id)!);
      spans.push({ from: Math.min(...positions), to: Math.max(...positions), width: widest(statement.text) + 20 });
    }
  }
  // Narrow spans first, so that a wide span only widens its last gap by what is still missing.
  for (const span of spans.sort((left, right) => left.to - left.from - (right.to - right.from))) {
    if (span.from === span.to) continue;
    const have = gaps.slice(span.from, span.to).reduce((sum, gap) => sum + gap, 0);
    if (have < span.width) gaps[span.to - 1]! += span.width - have;
  }
  const x = new Map<string, number>();
  let position = MARGIN + boxWidth[0]! / 2 + 60;
  diagram.participants.forEach((participant, at) => {
    x.set(participant.id, position);
    position += gaps[at] ?? 0;
  });
  return x;
}

/**
 * Renders a diagram as an SVG document, to inline in a page or to open alone; `title` is its
 * accessible name, `id` names it in the page (and keeps its arrowhead's id unique there).
 */
export function renderSequenceDiagram(source: string, title: string, id: string): string {
  const head = `${id}-arrowhead`;
  const diagram = parseSequenceDiagram(source);
  const x = columns(diagram);
  const parts: string[] = [];
  const text = (content: string, tx: number, ty: number, anchor: 'start' | 'middle' = 'middle', extra = '') =>
    lineBreaks(content)
      .map((line, row) => `<text x="${tx}" y="${ty + row * LINE_HEIGHT}" text-anchor="${anchor}"${extra}>${escapeXml(line)}</text>`)
      .join('');
  let y = MARGIN + BOX_HEIGHT + 24;
  const halfBox = (id: string) => Math.max(110, widest(diagram.participants.find((participant) => participant.id === id)!.label) + 24) / 2;
  let right = Math.max(...[...x].map(([id, center]) => center + halfBox(id)));
  let left = Math.min(...[...x].map(([id, center]) => center - halfBox(id)));

  const layout = (statements: Statement[]): { min: number; max: number } => {
    let min = Infinity;
    let max = -Infinity;
    const cover = (...points: number[]) => {
      min = Math.min(min, ...points);
      max = Math.max(max, ...points);
    };
    for (const statement of statements) {
      if (statement.kind === 'message') {
        const from = x.get(statement.from)!;
        const to = x.get(statement.to)!;
        const rows = lineBreaks(statement.text).length;
        const style = statement.dashed ? ' stroke-dasharray="6 4"' : '';
        if (from === to) {
          parts.push(text(statement.text, from + 10, y, 'start', ' class="sd-message"'));
          const top = y + (rows - 1) * LINE_HEIGHT + 8;
          parts.push(`<path d="M${from} ${top} h40 v22 h-38" fill="none" class="sd-arrow"${style} marker-end="url(#${head})"/>`);
          cover(from, from + 50 + widest(statement.text));
          y = top + 40;
        } else {
          parts.push(text(statement.text, (from + to) / 2, y, 'middle', ' class="sd-message"'));
          const line = y + (rows - 1) * LINE_HEIGHT + 9;
          const end = to > from ? to - 2 : to + 2;
          parts.push(`<line x1="${from}" y1="${line}" x2="${end}" y2="${line}" class="sd-arrow"${style} marker-end="url(#${head})"/>`);
          cover(from, to);
          y = line + 30;
        }
      } else if (statement.kind === 'note') {
        const positions = statement.participants.map((id) => x.get(id)!);
        const width = Math.max(widest(statement.text) + 20, positions.length > 1 ? Math.max(...positions) - Math.min(...positions) + 60 : 0);
        const center = (Math.min(...positions) + Math.max(...positions)) / 2;
        const start = statement.placement === 'over' ? center - width / 2 : statement.placement === 'right' ? positions[0]! + 12 : positions[0]! - 12 - width;
        const height = lineBreaks(statement.text).length * LINE_HEIGHT + 12;
        parts.push(`<rect x="${start}" y="${y - 4}" width="${width}" height="${height}" class="sd-note"/>`);
        parts.push(text(statement.text, start + width / 2, y + 14, 'middle', ' class="sd-note-text"'));
        cover(start, start + width);
        y += height + 18;
      } else {
        const top = y - 6;
        y += 34;
        const dividers: Array<{ y: number; label: string }> = [];
        let frame = { min: Infinity, max: -Infinity };
        statement.sections.forEach((section, at) => {
          if (at > 0) {
            dividers.push({ y: y - 8, label: `[${section.label}]` });
            y += 34;
          }
          const inner = layout(section.body);
          frame = { min: Math.min(frame.min, inner.min), max: Math.max(frame.max, inner.max) };
        });
        const label = `${statement.keyword} ${statement.sections[0]!.label ? `[${statement.sections[0]!.label}]` : ''}`.trim();
        const frameLeft = frame.min - FRAME_PADDING - 20;
        const frameRight = Math.max(frame.max + FRAME_PADDING + 20, frameLeft + widest(label) + 40);
        for (const divider of dividers) {
          parts.push(`<line x1="${frameLeft}" y1="${divider.y}" x2="${frameRight}" y2="${divider.y}" class="sd-frame-divider"/>`);
          parts.push(text(divider.label, (frameLeft + frameRight) / 2, divider.y + 16, 'middle', ' class="sd-frame-label"'));
        }
        const tagWidth = widest(statement.keyword) + 18;
        parts.push(`<rect x="${frameLeft}" y="${top}" width="${frameRight - frameLeft}" height="${y - top}" class="sd-frame"/>`);
        parts.push(`<path d="M${frameLeft} ${top} h${tagWidth} v14 l-8 8 h-${tagWidth - 8} z" class="sd-frame-tag"/>`);
        parts.push(text(statement.keyword, frameLeft + 6, top + 15, 'start', ' class="sd-frame-keyword"'));
        if (statement.sections[0]!.label)
          parts.push(text(`[${statement.sections[0]!.label}]`, frameLeft + tagWidth + 8, top + 15, 'start', ' class="sd-frame-label"'));
        cover(frameLeft, frameRight);
        y += 22;
      }
    }
    left = Math.min(left, min - 10);
    right = Math.max(right, max + 10);
    return { min, max };
  };
  layout(diagram.statements);

  const bottom = y + 4;
  const boxes = (top: number) =>
    diagram.participants.map((participant) => {
      const width = Math.max(110, widest(participant.label) + 24);
      const rows = lineBreaks(participant.label).length;
      const center = x.get(participant.id)!;
      return `<rect x="${center - width / 2}" y="${top}" width="${width}" height="${BOX_HEIGHT}" rx="4" class="sd-participant"/>${text(participant.label, center, top + BOX_HEIGHT / 2 + 5 - ((rows - 1) * LINE_HEIGHT) / 2, 'middle', ' class="sd-participant-label"')}`;
    });
  const lifelines = diagram.participants.map(
    (participant) => `<line x1="${x.get(participant.id)}" y1="${MARGIN + BOX_HEIGHT}" x2="${x.get(participant.id)}" y2="${bottom}" class="sd-lifeline"/>`,
  );
  const width = Math.ceil(right - left + 2 * MARGIN);
  const height = bottom + BOX_HEIGHT + MARGIN;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" id="${id}" class="sequence-diagram" role="img" aria-label="${escapeXml(title)}" viewBox="${Math.floor(left - MARGIN)} 0 ${width} ${height}" width="${width}" height="${height}" font-family="system-ui, 'DejaVu Sans', sans-serif" font-size="${FONT_SIZE}">`,
    `<title>${escapeXml(title)}</title>`,
    '<style>.sd-participant{fill:#eef3fb;stroke:#1d3557}.sd-participant-label{font-weight:600;fill:#1d3557}.sd-lifeline{stroke:#9aa5b1;stroke-dasharray:4 4}.sd-arrow{stroke:#1d3557;stroke-width:1.4}.sd-message{fill:#111}.sd-note{fill:#fff8d6;stroke:#c9a227}.sd-note-text{fill:#333}.sd-frame{fill:none;stroke:#6b7785}.sd-frame-divider{stroke:#6b7785;stroke-dasharray:5 4}.sd-frame-tag{fill:#e6e9ed;stroke:#6b7785}.sd-frame-keyword{font-weight:600;fill:#333}.sd-frame-label{fill:#333;font-style:italic}</style>',
    `<defs><marker id="${head}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill="#1d3557"/></marker></defs>`,
    ...lifelines,
    ...boxes(MARGIN),
    ...parts,
    ...boxes(bottom),
    '</svg>',
  ].join('\n');
}

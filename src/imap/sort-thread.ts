// SORT's ordering and THREAD's two algorithms (RFC 5256 §3, RFC 5957 §3) over messages whose keys are already
// known (the store's SortKeys). Pure: the SORT and THREAD commands (commands/sort.ts) read and answer.
import type { SortKeys } from '../mailstore/types.js';
import type { SortCriterion, ThreadNode } from './protocol/sort.js';

/** One message as SORT and THREAD see it. */
export interface SortItem {
  seq: number;
  /** What the response names it by: the sequence number, or the UID for UID SORT / UID THREAD. */
  id: number;
  /** INTERNALDATE, ms. */
  arrival: number;
  size: number;
  keys: SortKeys;
}

/** RFC 5256 §2.2: the Date header in UTC, else the INTERNALDATE. */
export const sentDate = (m: SortItem): number => m.keys.d ?? m.arrival;

const cmpNum = (a: number, b: number) => (a < b ? -1 : a > b ? 1 : 0);
const cmpStr = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function compareKey(key: SortCriterion['key'], a: SortItem, b: SortItem): number {
  switch (key) {
    case 'ARRIVAL':
      return cmpNum(a.arrival, b.arrival);
    case 'DATE':
      return cmpNum(sentDate(a), sentDate(b));
    case 'SIZE':
      return cmpNum(a.size, b.size);
    case 'SUBJECT':
      return cmpStr(a.keys.s, b.keys.s);
    case 'FROM':
      return cmpStr(a.keys.f, b.keys.f);
    case 'TO':
      return cmpStr(a.keys.t, b.keys.t);
    case 'CC':
      return cmpStr(a.keys.c, b.keys.c);
    case 'DISPLAYFROM':
      return cmpStr(a.keys.df, b.keys.df);
    case 'DISPLAYTO':
      return cmpStr(a.keys.dt, b.keys.dt);
  }
}

/** The items in SORT order: each criterion in turn (REVERSE turns that one only), then the sequence number (§3). */
export function sortItems(items: SortItem[], criteria: readonly SortCriterion[]): SortItem[] {
  return [...items].sort((a, b) => {
    for (const c of criteria) {
      const r = compareKey(c.key, a, b);
      if (r !== 0) return c.reverse ? -r : r;
    }
    return a.seq - b.seq;
  });
}

/** By sent date, then sequence number (§2.2: the tie-breaker). */
const bySent = (a: SortItem, b: SortItem) => cmpNum(sentDate(a), sentDate(b)) || a.seq - b.seq;

/**
 * ORDEREDSUBJECT (§3): sorted by base subject then sent date; a run of one base subject is a thread whose
 * first message has the others as children; threads ordered by their first message's sent date.
 */
export function orderedSubject(items: SortItem[]): ThreadNode[] {
  const sorted = [...items].sort((a, b) => cmpStr(a.keys.s, b.keys.s) || bySent(a, b));
  const threads: Array<{ first: SortItem; node: ThreadNode }> = [];
  let current: { first: SortItem; node: ThreadNode } | null = null;
  for (const m of sorted) {
    if (current && current.first.keys.s === m.keys.s) {
      current.node.children.push({ id: m.id, children: [] });
    } else {
      current = { first: m, node: { id: m.id, children: [] } };
      threads.push(current);
    }
  }
  return threads.sort((a, b) => bySent(a.first, b.first)).map((t) => t.node);
}

/** A container of the REFERENCES algorithm: a message, or a dummy standing for a message not selected. */
interface Container {
  msg: SortItem | null;
  parent: Container | null;
  children: Container[];
}

const newContainer = (msg: SortItem | null = null): Container => ({ msg, parent: null, children: [] });

/** True when `a` is `b` or one of its ancestors. */
function isAncestor(a: Container, b: Container): boolean {
  for (let c: Container | null = b; c; c = c.parent) if (c === a) return true;
  return false;
}

function unlink(c: Container): void {
  const p = c.parent;
  if (!p) return;
  p.children.splice(p.children.indexOf(c), 1);
  c.parent = null;
}

function link(parent: Container, child: Container): void {
  child.parent = parent;
  parent.children.push(child);
}

/** The message a container is sorted and named by: its own, or (a dummy) its first child's. */
function firstMessage(c: Container): SortItem | null {
  for (let x: Container | undefined = c; x; x = x.children[0]) if (x.msg) return x.msg;
  return null;
}

const byFirstSent = (a: Container, b: Container) => {
  const ma = firstMessage(a);
  const mb = firstMessage(b);
  if (!ma || !mb) return ma ? -1 : mb ? 1 : 0;
  return bySent(ma, mb);
};

/** Step 3: dummies without children go; a dummy's children take its place, at the top only when it had one child. */
function prune(list: Container[], top: boolean): Container[] {
  const out: Container[] = [];
  for (const c of list) {
    c.children = prune(c.children, false);
    for (const k of c.children) k.parent = c;
    if (c.msg === null) {
      if (c.children.length === 0) continue;
      if (!top || c.children.length === 1) {
        out.push(...c.children);
        continue;
      }
    }
    out.push(c);
  }
  return out;
}

/** Step 6: siblings by sent date, the deepest first (a dummy by its first child). */
function sortTree(list: Container[]): void {
  const stack: Container[] = [...list];
  const order: Container[] = [];
  while (stack.length) {
    const c = stack.pop()!;
    order.push(c);
    stack.push(...c.children);
  }
  for (let i = order.length - 1; i >= 0; i--) order[i]!.children.sort(byFirstSent);
  list.sort(byFirstSent);
}

/** REFERENCES (§3): link by Message-ID, References and In-Reply-To, prune dummies, gather by base subject, sort. */
export function referencesThreads(items: SortItem[]): ThreadNode[] {
  const messages = [...items].sort((a, b) => a.seq - b.seq);
  const idTable = new Map<string, Container>();
  const all: Container[] = [];
  const container = (id: string) => {
    let c = idTable.get(id);
    if (!c) {
      c = newContainer();
      idTable.set(id, c);
      all.push(c);
    }
    return c;
  };
  for (const m of messages) {
    // 1A: the message's own container; a missing or repeated Message-ID gets a unique one.
    let own: Container;
    const known = m.keys.m === null ? undefined : idTable.get(m.keys.m);
    if (m.keys.m !== null && (!known || known.msg === null)) {
      own = container(m.keys.m);
      own.msg = m;
    } else {
      own = newContainer(m);
      all.push(own);
    }
    // 1B: the references in order, each the parent of the next, unless that one has a parent or it would loop.
    const refs = m.keys.x.map(container);
    for (let i = 0; i + 1 < refs.length; i++) {
      const parent = refs[i]!;
      const child = refs[i + 1]!;
      if (child.parent === null && !isAncestor(child, parent)) link(parent, child);
    }
    // 1C: the last reference is the message's parent (its own say replaces one other messages implied).
    const last = refs[refs.length - 1];
    unlink(own);
    if (last && !isAncestor(own, last)) link(last, own);
  }
  // 2–3: the root's children, pruned.
  let root = prune(
    all.filter((c) => c.parent === null),
    true,
  );
  for (const c of root) c.parent = null;
  // 4: the root's children by sent date (a dummy by its earliest child).
  for (const c of root) if (c.msg === null) c.children.sort(byFirstSent);
  root.sort(byFirstSent);
  // 5: threads of one base subject gathered.
  const subjectOf = (c: Container): SortItem | null => c.msg ?? c.children[0]?.msg ?? null;
  const table = new Map<string, Container>();
  for (const c of root) {
    const m = subjectOf(c);
    if (!m || m.keys.s === '') continue;
    const held = table.get(m.keys.s);
    if (!held) table.set(m.keys.s, c);
    else if (held.msg !== null && (c.msg === null || (held.msg.keys.r === 1 && m.keys.r === 0))) table.set(m.keys.s, c);
  }
  const merged: Container[] = [];
  for (const c of root) {
    const m = subjectOf(c);
    const held = m && m.keys.s !== '' ? table.get(m.keys.s) : undefined;
    if (!m || !held || held === c) {
      merged.push(c);
      continue;
    }
    if (held.msg === null && c.msg === null) {
      for (const k of c.children) link(held, k);
      c.children = [];
    } else if (held.msg === null) {
      link(held, c);
    } else if (c.msg !== null && c.msg.keys.r === 1 && held.msg.keys.r === 0) {
      link(held, c);
    } else {
      // A new dummy in the held thread's place: `held` itself becomes the dummy (it keeps its place in the root,
      // no search), its message and children move to a new container under it, beside the current one.
      const moved = newContainer(held.msg);
      moved.children = held.children;
      for (const k of moved.children) k.parent = moved;
      held.msg = null;
      held.children = [];
      link(held, moved);
      link(held, c);
    }
  }
  root = merged;
  // 6: every set of siblings by sent date.
  sortTree(root);
  const toNode = (c: Container): ThreadNode => ({ id: c.msg ? c.msg.id : null, children: c.children.map(toNode) });
  return root.map(toNode);
}

// Splits a callgrind dump taken with `--separate-threads=yes` into what the request itself ran (the
// "mutator") and what V8 ran for its own upkeep: the garbage collector and the compilers. The upkeep
// lands in a counted window or not depending on luck (a major collection costs ~555 k instructions per
// REST GET of the window when it lands), so totals moved up to 2.5x between runs while the mutator part
// reproduces within a few percent.
//
// Every function's *self* instructions are counted once, by thread and by name:
//   - threads other than the main one (V8's concurrent marker, parallel scavengers, sweepers and
//     TurboFan/Maglev compile jobs, libuv's pool): "background";
//   - on the main thread, functions of V8's heap (collector, marking, sweeping, evacuation) and
//     their write barrier slow paths: "gc"; V8's compilers (parser, bytecode generator, Sparkplug,
//     Maglev, TurboFan/Turboshaft, the assembler and deoptimizer): "jit";
//   - the rest, JIT-compiled JavaScript, builtins, the runtime, Node, libuv and SQLite: "mutator".
// A helper such as memcpy called by the collector counts as mutator: the split errs on the side of
// charging the request.
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

// matched against a function's qualified name without return type, template arguments or parameters
// (`v8::internal::Scavenger::ScavengePage`), and against its template arguments (the collector's
// visitors instantiate generic object walkers: `BodyDescriptorBase::IteratePointers<MainMarkingVisitor>`)
const GC_CLASS =
  /^(?:cppgc|heap::base)::|^v8::internal::(?:\w+::)*\w*(?:Heap(?!Object|Number)|Scaveng|Marking|MarkCompact|Sweep|Evacuat|RememberedSet|SlotSet|GCTracer|GlobalHandles|MemoryAllocator|MemoryReducer|LargeObjectSpace|PagedSpace|SemiSpace|NewSpace|FreeList|Ephemeron|ObjectStats|PointersUpdating|Compactor)\w*::/;
// root iteration of a scavenge (the startup object cache is walked on every one)
const GC_NAME = /IterateObjectCache|IterateRoots|IterateStrongRoots|RootScavengeVisitor/;
// libc helpers (zeroing and copying memory): charged to the class of the function that called them
// (the collector clears and copies pages, zlib zeroes its tables, the request copies strings)
const HELPER = /^(?:__)?mem(?:set|cpy|move)(?:_\w+)?$/;
const GC_TEMPLATE =
  /(?:Marking|Scaveng|Evacuat|PointersUpdating|RecordMigratedSlot|Sweep)\w*Visitor|Scavenger/;
const JIT_CLASS =
  /^v8::internal::(?:compiler|maglev|baseline|wasm|turboshaft)::|^v8::internal::(?:interpreter::)?(?:Parser|ParserBase|PreParser|Scanner|AstNodeFactory|AstValueFactory|AstRawString|Scope|DeclarationScope|ClassScope|FuncNameInferrer|Compiler|Deoptimizer|Assembler|TurboAssembler|MacroAssembler|OptimizingCompileDispatcher|SourcePositionTableBuilder|Zone|BytecodeGenerator|BytecodeArrayBuilder|BytecodeArrayWriter|BytecodeRegisterOptimizer|BytecodeRegisterAllocator|ConstantArrayBuilder|HandlerTableBuilder)(?:<\w*>)?::/;

/** 'gc', 'jit' or 'mutator' for a function of the main thread. */
export function kindOf(name) {
  let depth = 0;
  let paren = 0;
  let bare = '';
  let templates = '';
  for (const ch of name) {
    if (ch === '(' && depth === 0) {
      paren += 1;
    } else if (ch === ')' && depth === 0) {
      paren -= 1;
    } else if (paren === 0 && ch === '<') {
      depth += 1;
    } else if (paren === 0 && ch === '>' && depth > 0) {
      depth -= 1;
    } else if (paren === 0 && depth === 0) {
      bare += ch;
    } else if (depth > 0) {
      templates += ch;
    }
  }
  const tokens = bare.split(' ').filter((t) => t.includes('::'));
  const qualified = tokens.at(-1) ?? bare;
  if (GC_CLASS.test(qualified) || GC_TEMPLATE.test(templates) || GC_NAME.test(name)) {
    return 'gc';
  }
  return JIT_CLASS.test(qualified) ? 'jit' : 'mutator';
}

/** The dumps of the newest `--dump` of `outFile`: one file per thread (`<out>.<n>-<thread>`). */
export function newestThreadDumps(outFile) {
  const dir = dirname(outFile);
  const prefix = `${basename(outFile)}.`;
  const parts = new Map();
  for (const f of readdirSync(dir)) {
    const m = f.startsWith(prefix) && /^(\d+)-(\d+)$/.exec(f.slice(prefix.length));
    if (m) {
      const list = parts.get(Number(m[1])) ?? [];
      list.push({ file: join(dir, f), thread: Number(m[2]) });
      parts.set(Number(m[1]), list);
    }
  }
  const newest = Math.max(...parts.keys());
  if (!Number.isFinite(newest)) {
    throw new Error(
      `no per-thread dumps of ${outFile} (run callgrind with --separate-threads=yes)`,
    );
  }
  return parts.get(newest);
}

/** { total, mutator, gc, jit, background, top } instructions of one dump (all its threads). */
export function splitDump(outFile) {
  const sums = { total: 0, mutator: 0, gc: 0, jit: 0, background: 0 };
  const byName = new Map();
  for (const { file, thread } of newestThreadDumps(outFile)) {
    const { costs, helperCalls } = selfCosts(readFileSync(file, 'utf8'));
    const add = (kind, name, n) => {
      sums[kind] += n;
      if (thread === 1) {
        byName.set(`${kind} ${name}`, (byName.get(`${kind} ${name}`) ?? 0) + n);
      }
    };
    for (const [name, self] of costs) {
      sums.total += self;
      if (thread !== 1) {
        add('background', name, self);
        continue;
      }
      let rest = self;
      for (const [caller, n] of helperCalls.get(name) ?? []) {
        const share = Math.min(n, rest);
        add(kindOf(caller), `${name} <- ${kindOf(caller)}`, share);
        rest -= share;
      }
      if (rest > 0) {
        add(kindOf(name), name, rest);
      }
    }
  }
  const top = [...byName].sort((a, b) => b[1] - a[1]).slice(0, 40);
  return { ...sums, top };
}

/**
 * Self instructions per function name of one callgrind dump (name compression, call lines skipped),
 * and for the libc helpers (HELPER) the instructions of each call edge into them, by caller.
 */
export function selfCosts(text) {
  const names = new Map();
  const costs = new Map();
  const helperCalls = new Map();
  let fn;
  let callee;
  let skipNext = false;
  for (const line of text.split('\n')) {
    if (skipNext) {
      // the line after `calls=` is the callee's inclusive cost, not the caller's own
      skipNext = false;
      if (callee !== undefined && fn !== undefined && HELPER.test(callee)) {
        const byCaller = helperCalls.get(callee) ?? new Map();
        byCaller.set(fn, (byCaller.get(fn) ?? 0) + Number(line.split(' ')[1] ?? 0));
        helperCalls.set(callee, byCaller);
      }
      continue;
    }
    const c = line.charCodeAt(0);
    if ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42) {
      if (fn !== undefined) {
        const parts = line.split(' ');
        costs.set(fn, (costs.get(fn) ?? 0) + Number(parts[1] ?? 0));
      }
    } else if (line.startsWith('fn=')) {
      fn = compressedName(line.slice(3), names);
    } else if (line.startsWith('calls=')) {
      skipNext = true;
    } else if (line.startsWith('cfn=')) {
      callee = compressedName(line.slice(4), names);
    }
  }
  return { costs, helperCalls };
}

function compressedName(spec, names) {
  const m = /^\((\d+)\)(?: (.*))?$/.exec(spec);
  if (!m) {
    return spec;
  }
  if (m[2] !== undefined) {
    names.set(m[1], m[2]);
    return m[2];
  }
  return names.get(m[1]) ?? spec;
}

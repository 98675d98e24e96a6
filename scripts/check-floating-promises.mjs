#!/usr/bin/env node
/**
 * Fails on promise chains in src/ whose rejection nobody handles. Node ends the process on an unhandled rejection,
 * so one failing turn behind `void next.finally(...)` took every channel down (issue 16 item 1). Two shapes are
 * refused, found in the syntax tree (no type information, so only what can be told reliably):
 *
 *   void <promise>                       `void` discards the promise: its chain must end in a handler
 *   <promise>.finally(…) / .then(f);     a statement whose chain ends in .finally or a one-argument .then
 *
 * A chain is handled when its last link is `.catch(h)` or a two-argument `.then(f, r)`; `.finally(f)` and
 * `.then(f)` re-raise the rejection of what they follow, so they are handled only when that is. A `const` in scope
 * counts as its initializer (`const tail = run.then(ok, fail); void tail.then(cleanup)` is fine). Anything else after
 * `void` — a call of a function or method, an identifier bound elsewhere — needs its handler at the site:
 * `void work().catch((err) => log.warn(…))`. `void` of a literal (`void 0`) is not a promise and is left alone.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

// `--root DIR` checks another tree (the check's own test uses it).
const rootAt = process.argv.indexOf('--root');
const ROOT = rootAt > 0 ? process.argv[rootAt + 1] : join(import.meta.dirname, '..');

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.(?:ts|tsx|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** Parentheses, `as`, `!` and `satisfies` do not change which promise an expression is. */
function unwrap(node) {
  let inner = node;
  while (
    ts.isParenthesizedExpression(inner) ||
    ts.isAsExpression(inner) ||
    ts.isNonNullExpression(inner) ||
    ts.isSatisfiesExpression(inner) ||
    ts.isTypeAssertionExpression(inner)
  ) {
    inner = inner.expression;
  }
  return inner;
}

/** `x.name(…)` → { receiver: x, name, args }; anything else → undefined. */
function methodCall(node) {
  const call = unwrap(node);
  if (!ts.isCallExpression(call)) return undefined;
  const callee = unwrap(call.expression);
  if (!ts.isPropertyAccessExpression(callee) || !ts.isIdentifier(callee.name)) return undefined;
  return { receiver: callee.expression, name: callee.name.text, args: call.arguments.length };
}

/** The initializer of the `const <name>` nearest in scope to `from`, if any. */
function constInitializer(name, from) {
  for (let scope = from.parent; scope; scope = scope.parent) {
    const statements = ts.isBlock(scope) || ts.isSourceFile(scope) || ts.isModuleBlock(scope) ? scope.statements : [];
    for (const statement of statements) {
      if (!ts.isVariableStatement(statement)) continue;
      if (!(statement.declarationList.flags & ts.NodeFlags.Const)) continue;
      for (const declaration of statement.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name) && declaration.name.text === name) return declaration.initializer;
      }
    }
  }
  return undefined;
}

/**
 * A callback that cannot hand back a rejected promise: a plain (not async) function with a block body and no
 * `return <value>` — it can only throw synchronously, which is a bug in that line, not a rejection passed on.
 */
function quiet(node) {
  const fn = node && unwrap(node);
  if (!fn || !(ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) || !ts.isBlock(fn.body)) return false;
  if (fn.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)) return false;
  let returns = false;
  const look = (node) => {
    if (ts.isFunctionLike(node)) return; // a nested function's returns are its own
    if (ts.isReturnStatement(node) && node.expression) returns = true;
    ts.forEachChild(node, look);
  };
  ts.forEachChild(fn.body, look);
  return !returns;
}

/** Contains a `throw` or an `await` outside nested functions. */
function mayFail(node) {
  let found = false;
  const look = (inner) => {
    if (found || ts.isFunctionLike(inner)) return;
    if (ts.isThrowStatement(inner) || ts.isAwaitExpression(inner)) found = true;
    else ts.forEachChild(inner, look);
  };
  look(node);
  return found;
}

/** Makes a call (could throw, which in an async function is a rejection) outside nested functions. */
function calls(node) {
  let found = false;
  const look = (inner) => {
    if (found || ts.isFunctionLike(inner)) return;
    if (ts.isCallExpression(inner) || ts.isNewExpression(inner) || ts.isAwaitExpression(inner)) found = true;
    else ts.forEachChild(inner, look);
  };
  look(node);
  return found;
}

/**
 * An async function or method that catches everything: guard statements that make no call, then one
 * `try { … } catch { … }` whose catch (and finally) neither throws nor awaits.
 */
function catchesEverything(fn) {
  if (!fn?.body || !ts.isBlock(fn.body)) return false;
  if (!fn.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)) return false;
  const statements = fn.body.statements;
  const last = statements.at(-1);
  if (!last || !ts.isTryStatement(last) || !last.catchClause || mayFail(last.catchClause.block)) return false;
  if (last.finallyBlock && mayFail(last.finallyBlock)) return false;
  return statements.slice(0, -1).every((statement) => !calls(statement));
}

/** The function `this.name(…)` or `name(…)` calls, when it is declared in the same file. */
function calleeDeclaration(call) {
  const callee = unwrap(call.expression);
  const source = call.getSourceFile();
  if (ts.isPropertyAccessExpression(callee) && callee.expression.kind === ts.SyntaxKind.ThisKeyword) {
    for (let scope = call.parent; scope; scope = scope.parent) {
      if (!ts.isClassLike(scope)) continue;
      return scope.members.find(
        (member) => ts.isMethodDeclaration(member) && member.name.getText(source) === callee.name.text,
      );
    }
    return undefined;
  }
  if (ts.isIdentifier(callee)) {
    return source.statements.find(
      (statement) => ts.isFunctionDeclaration(statement) && statement.name?.text === callee.text,
    );
  }
  return undefined;
}

/** True when a rejection of this promise expression is handled within the expression (or its const). */
function handled(node, seen = new Set()) {
  const expression = unwrap(node);
  const link = methodCall(expression);
  if (link) {
    if (link.name === 'catch') return link.args >= 1;
    if (link.name === 'then' && link.args >= 2) return true;
    const call = unwrap(expression);
    if ((link.name === 'then' || link.name === 'finally') && quiet(call.arguments[0])) {
      return handled(link.receiver, seen);
    }
  }
  if (ts.isCallExpression(expression) && catchesEverything(calleeDeclaration(expression))) return true;
  if (ts.isIdentifier(expression) && !seen.has(expression.text)) {
    seen.add(expression.text);
    const initializer = constInitializer(expression.text, expression);
    return initializer !== undefined && handled(initializer, seen);
  }
  return false;
}

const isLiteral = (node) =>
  ts.isLiteralExpression(node) ||
  node.kind === ts.SyntaxKind.TrueKeyword ||
  node.kind === ts.SyntaxKind.FalseKeyword ||
  node.kind === ts.SyntaxKind.NullKeyword ||
  node.kind === ts.SyntaxKind.UndefinedKeyword;

function problemsIn(file, text) {
  const kind = file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const found = [];
  const report = (node, message) => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    found.push(`${file}:${line + 1}: ${message}: ${node.getText(source).split('\n')[0].slice(0, 100)}`);
  };
  const visit = (node) => {
    if (ts.isVoidExpression(node)) {
      const operand = unwrap(node.expression);
      if (!isLiteral(operand) && !handled(operand)) {
        report(node, '`void` drops a promise whose rejection nobody handles; end its chain with .catch(...)');
      }
    } else if (ts.isExpressionStatement(node)) {
      const link = methodCall(node.expression);
      const floating = link && (link.name === 'finally' || (link.name === 'then' && link.args < 2));
      if (floating && !handled(node.expression)) {
        report(
          node,
          `a floating chain ends with .${link.name}(), which re-raises a rejection; end it with .catch(...)`,
        );
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const problems = [];
let files = 0;
for (const path of sourceFiles(join(ROOT, 'src'))) {
  files += 1;
  problems.push(...problemsIn(relative(ROOT, path).split(sep).join('/'), readFileSync(path, 'utf8')));
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`check-floating-promises: ${problem}`);
  process.exit(1);
}
console.log(`check-floating-promises: ok (${files} files, no unhandled promise chains)`);

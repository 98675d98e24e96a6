/**
 * A page's serious accessibility faults, found in the page itself: controls without an accessible name, text whose
 * contrast is below WCAG AA (4.5:1, 3:1 for large text), images without alt, a missing or wrong `lang`, duplicate ids.
 * A stand-in for axe-core's rules of the same names (label/button-name/link-name/select-name, color-contrast,
 * image-alt, html-has-lang/valid-lang, duplicate-id-aria) until that dependency is added; it runs inside the page
 * (`page.evaluate(findA11yFaults)`), so it must not use anything from its module. Plain JavaScript: the project's
 * TypeScript settings have no DOM types (a11y-check.d.ts gives the signatures).
 */
export function findA11yFaults() {
  const faults = [];
  const describe = (el) => {
    const id = el.id ? `#${el.id}` : '';
    const cls = el.classList.length ? `.${[...el.classList].join('.')}` : '';
    return `<${el.tagName.toLowerCase()}${id}${cls}> "${(el.textContent ?? '').trim().slice(0, 40)}"`;
  };
  const visible = (el) => {
    const style = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    return style.visibility !== 'hidden' && style.display !== 'none' && box.width > 0 && box.height > 0;
  };
  const lang = document.documentElement.lang;
  if (!lang) faults.push('html has no lang');
  else if (!Intl.getCanonicalLocales(lang).length) faults.push(`html lang "${lang}" is not a language tag`);
  const ids = [...document.querySelectorAll('[id]')].map((el) => el.id);
  for (const id of new Set(ids.filter((id, i) => ids.indexOf(id) !== i))) faults.push(`duplicate id "${id}"`);
  // Accessible names.
  const nameOf = (el) => {
    const labelled = el.getAttribute('aria-labelledby');
    if (labelled) {
      return labelled
        .split(/\s+/)
        .map((id) => document.getElementById(id)?.textContent ?? '')
        .join(' ')
        .trim();
    }
    const aria = el.getAttribute('aria-label')?.trim();
    if (aria) return aria;
    if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement) {
      const label = [...(el.labels ?? [])].map((l) => l.textContent ?? '').join(' ');
      return (label || el.title || '').trim();
    }
    const text = (el.textContent ?? '').trim();
    const alt = [...el.querySelectorAll('img[alt]')].map((img) => img.getAttribute('alt')).join(' ');
    return (text || alt || el.title || '').trim();
  };
  const controls = document.querySelectorAll(
    'button, a[href], input:not([type="hidden"]), textarea, select, [role="button"], summary',
  );
  for (const el of controls) {
    if (el.closest('[aria-hidden="true"]') || el.hidden) continue;
    if (!visible(el) && !(el instanceof HTMLInputElement)) continue;
    if (el instanceof HTMLInputElement && el.type === 'file' && el.tabIndex < 0) continue;
    if (!nameOf(el)) faults.push(`no accessible name: ${describe(el)}`);
  }
  for (const img of document.querySelectorAll('img')) {
    if (!img.hasAttribute('alt')) faults.push(`image without alt: ${describe(img)}`);
  }
  const parse = (value) => {
    const rgb = /rgba?\(([^)]+)\)/.exec(value);
    if (rgb?.[1]) {
      const [r = 0, g = 0, b = 0, a = 1] = rgb[1]
        .split(/[\s,/]+/)
        .filter(Boolean)
        .map(Number);
      return [r, g, b, a];
    }
    const srgb = /color\(srgb ([^)]+)\)/.exec(value);
    if (srgb?.[1]) {
      const [r = 0, g = 0, b = 0, a = 1] = srgb[1]
        .split(/[\s/]+/)
        .filter(Boolean)
        .map(Number);
      return [r * 255, g * 255, b * 255, a];
    }
    return null;
  };
  const over = (top, bottom) => {
    const a = top[3] + bottom[3] * (1 - top[3]);
    if (a === 0) return [0, 0, 0, 0];
    const mix = (i) => (top[i] * top[3] + bottom[i] * bottom[3] * (1 - top[3])) / a;
    return [mix(0), mix(1), mix(2), a];
  };
  const background = (el) => {
    const layers = [];
    for (let node = el; node; node = node.parentElement) {
      const style = getComputedStyle(node);
      if (style.backgroundImage !== 'none') return 'image';
      const color = parse(style.backgroundColor);
      if (color && color[3] > 0) layers.push(color);
      if (color && color[3] >= 1) break;
    }
    let result = [255, 255, 255, 1];
    for (const layer of layers.reverse()) result = over(layer, result);
    return result;
  };
  const luminance = ([r, g, b]) => {
    const channel = (v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || seen.has(el) || !(node.textContent ?? '').trim()) continue;
    seen.add(el);
    if (!visible(el) || el.closest('[aria-hidden="true"], .sr-only, :disabled, option')) continue;
    const style = getComputedStyle(el);
    const fg = parse(style.color);
    const bg = background(el);
    if (!fg || bg === 'image') continue;
    let opacity = 1;
    for (let up = el; up; up = up.parentElement) opacity *= Number(getComputedStyle(up).opacity);
    const shown = over([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
    const [light, dark] = [luminance(shown), luminance(bg)].sort((a, b) => b - a);
    const ratio = (light + 0.05) / (dark + 0.05);
    const size = Number.parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5))
      faults.push(`contrast ${ratio.toFixed(2)}:1 (${style.color} on bg): ${describe(el)}`);
  }
  return faults;
}

/**
 * The focused element (after a Tab): its name, whether it is on screen, and whether focus shows: an outline or a box
 * shadow on it or on one of its two nearest ancestors that goes away when it loses focus. Runs in the page.
 */
export function focusStop() {
  const el = document.activeElement;
  if (!el || el === document.body) return { name: '(body)', onScreen: true, ring: true };
  const chain = [el, el.parentElement, el.parentElement?.parentElement].filter((node) => node != null);
  const looks = () =>
    chain.map((node) => {
      const style = getComputedStyle(node);
      const outline =
        style.outlineStyle !== 'none' && Number.parseFloat(style.outlineWidth) > 0
          ? `${style.outlineWidth} ${style.outlineColor}`
          : '';
      return `${outline}|${style.boxShadow}`;
    });
  const focused = looks();
  el.blur();
  const unfocused = looks();
  el.focus();
  const box = el.getBoundingClientRect();
  const onScreen = box.right > 0 && box.bottom > 0 && box.left < innerWidth && box.top < innerHeight;
  const name = el.getAttribute('aria-label') || el.textContent?.trim() || el.id || el.tagName;
  return {
    name: `${el.tagName.toLowerCase()} ${name.slice(0, 40)}`,
    onScreen,
    ring: focused.some((look, i) => look !== unfocused[i]),
  };
}

/** The focused element as `tag: label` (its aria-label, else its text). Runs in the page. */
export function focusedName() {
  const el = document.activeElement;
  if (!el) return '';
  return `${el.tagName.toLowerCase()}: ${el.getAttribute('aria-label') ?? el.textContent?.trim() ?? ''}`;
}

/** Focus back to the top of the page, as on a fresh load. Runs in the page. */
export function blurFocus() {
  document.activeElement?.blur();
}

/** Whether the message box has the focus. Runs in the page. */
export function composerFocused() {
  return document.activeElement?.id === 'composer-input';
}

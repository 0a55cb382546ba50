export function poll_catching(f) {
  try { f(); return false; } catch (e) { return true; }
}
export function panic_error(message) {
  const e = new Error(message);
  e.name = 'TinkerPanicError';
  return e;
}
export function report_task_panic(e) {
  try { console.error(e); } catch (_) {}
}

// The signed-in user, shared by the views (null when signed out).
// The signed-in user's time zone (their timezone setting) is `zone`: dom.js's userZone().
export const session = { user: null, zone: null };

// The server sets a readable cookie beside the HttpOnly session one (fable_web/sessions.py,
// HINT_COOKIE): without it nobody is signed in here, and the UI does not ask (a refused request).
const HINT = "fable_signed_in";
export function mightBeSignedIn() { return document.cookie.split(";").some((c) => c.trim().startsWith(`${HINT}=`)); }
/** The session is gone (refused, or signed out): forget the hint, so the next page does not ask. */
export function forgetSignedIn() { document.cookie = `${HINT}=; Max-Age=0; path=/; SameSite=Lax`; }

// The signed-in user, shared by the views (null when signed out).
// The signed-in user's time zone (their timezone setting) is `zone`: dom.js's userZone().
export const session = { user: null, zone: null };

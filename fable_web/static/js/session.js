// The signed-in user, shared by the views (null when signed out).
export const session = { user: null };

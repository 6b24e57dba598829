"""Sharing: groups of users, and projects and notes shared with a user or a group at a
permission. Who may see and change what is decided in :mod:`fable_core.tools.access` alone; this
package holds the tools that make and list shares and groups."""

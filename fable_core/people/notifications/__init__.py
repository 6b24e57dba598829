"""Notifications: each user's in-app inbox (a share made or revoked, an answer finished while
they were away, a task due), and Web Push to their devices."""

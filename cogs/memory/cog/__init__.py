"""The memory cog's Discord surface: slash commands, gateway listeners, and everything a user reads."""
